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

func TestParseProcAddress(t *testing.T) {
	for raw, want := range map[string]string{
		"0100007F:1F90":                         "127.0.0.1:8080",
		"35FFFF0A:0035":                         "10.255.255.53:53",
		"00000000000000000000000001000000:01BB": "[::1]:443",
	} {
		addr, err := parseProcAddress(raw)
		require.NoError(t, err, raw)
		assert.Equal(t, want, addr.String(), raw)
	}
}

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
