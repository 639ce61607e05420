package env

import (
	"net"
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

// The guard's listing of the machine's sockets holds this process's TCP connections over
// loopback, with their remote port, in either family.
func TestSocketsListLoopbackConnections(t *testing.T) {
	for _, c := range []struct{ network, address, proto string }{
		{"tcp4", "127.0.0.1:0", "tcp"},
		{"tcp6", "[::1]:0", "tcp6"},
	} {
		listener, err := net.Listen(c.network, c.address)
		if err != nil && c.network == "tcp6" {
			t.Logf("no IPv6 loopback here: %v", err)
			continue
		}
		require.NoError(t, err)
		defer listener.Close()
		conn, err := net.Dial(c.network, listener.Addr().String())
		require.NoError(t, err)
		defer conn.Close()
		port := uint16(listener.Addr().(*net.TCPAddr).Port)
		found := false
		for _, s := range sockets() {
			found = found || s.proto == c.proto && s.remote.IsLoopback() && s.port == port && s.inode != "0"
		}
		assert.True(t, found, "a %s connection to %s is listed", c.network, listener.Addr())
	}
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
