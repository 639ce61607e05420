package env

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGuardSeesAConnectionOutsideLoopback shows the guard can fail: a UDP socket of this
// process connected (no packet sent) to an address outside loopback is reported.
func TestGuardSeesAConnectionOutsideLoopback(t *testing.T) {
	g := StartConnectionGuard()
	defer g.Close()
	conn, err := net.Dial("udp", "192.0.2.1:9") // TEST-NET-1: connect() on UDP sends nothing
	require.NoError(t, err)
	defer conn.Close()
	inside, err := net.Dial("udp", "127.0.0.1:9")
	require.NoError(t, err)
	defer inside.Close()
	require.Eventually(t, func() bool { return len(g.Outside()) > 0 }, 2*time.Second, 10*time.Millisecond)
	assert.Len(t, g.Outside(), 1)
	assert.Contains(t, g.Outside()[0], "udp 192.0.2.1:9")
}

// The kernel's answer to the guard's TCP request holds this process's connections, with their
// remote port, in either family, except those whose remote address the request skips.
func TestSocketsListTheConnectionsNotSkipped(t *testing.T) {
	type connection struct {
		proto string
		port  uint16
	}
	connect := func(network, address string) *connection {
		listener, err := net.Listen(network, address)
		if err != nil && network == "tcp6" {
			t.Logf("no IPv6 loopback here: %v", err)
			return nil
		}
		require.NoError(t, err)
		t.Cleanup(func() { listener.Close() })
		conn, err := net.Dial(network, listener.Addr().String())
		require.NoError(t, err)
		t.Cleanup(func() { conn.Close() })
		proto := map[string]string{"tcp4": "tcp", "tcp6": "tcp6"}[network]
		return &connection{proto, uint16(listener.Addr().(*net.TCPAddr).Port)}
	}
	kept, skipped, v6 := connect("tcp4", "127.0.0.2:0"), connect("tcp4", "127.0.0.3:0"), connect("tcp6", "[::1]:0")
	listed := func(skip []netip.Prefix, c *connection) bool {
		sockets, err := tcpSockets(skipRemotes(skip))
		require.NoError(t, err)
		for _, s := range sockets {
			if s.proto == c.proto && s.remote.IsLoopback() && s.port == c.port && s.inode != "0" {
				return true
			}
		}
		return false
	}
	some := []netip.Prefix{netip.MustParsePrefix("127.0.0.3/32"), netip.MustParsePrefix("10.0.0.0/8")}
	assert.True(t, listed(nil, kept), "nothing skipped: 127.0.0.2 is listed")
	assert.True(t, listed(nil, skipped), "nothing skipped: 127.0.0.3 is listed")
	assert.True(t, listed(some, kept), "127.0.0.2 is outside the skipped prefixes")
	assert.False(t, listed(some, skipped), "127.0.0.3/32 is skipped")
	assert.False(t, listed(allowedRemotes, kept), "the guard skips loopback")
	if v6 != nil {
		assert.True(t, listed(some, v6), "::1 is outside the skipped prefixes")
		assert.False(t, listed(allowedRemotes, v6), "the guard skips ::1")
	}
}

// A filter the kernel refuses is an error, not an empty list: the guard must not pass without
// looking.
func TestRefusedFilterIsAnError(t *testing.T) {
	_, err := tcpSockets([]byte{inetDiagBCJump, bcOpLen, 0, 0}) // a jump of 0 bytes
	require.Error(t, err)
	assert.Contains(t, err.Error(), "refused")
}

func TestLogsNamingAnOutsideAddress(t *testing.T) {
	dir := t.TempDir()
	lines := "ok: dial tcp 127.0.0.10:31443: connect: connection refused\n" +
		"E1123 failed: Get \"https://x.ns.svc:443\": dial tcp: lookup x.ns.svc on 10.255.255.53:53: no such host\n" +
		"E1123 dial tcp 10.255.0.250:31445: i/o timeout\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.log"), []byte(lines), 0o600))
	found := OutsideAddressesInLogs(dir)
	require.Len(t, found, 2)
	assert.Contains(t, found[0], "lookup x.ns.svc on 10.255.255.53:53")
	assert.Contains(t, found[1], "10.255.0.250:31445")
}
