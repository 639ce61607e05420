package env

import (
	"net"
	"sync/atomic"
)

// CountingEndpoint accepts connections on loopback only to count and close them: the address of
// something nobody may dial, such as the API server of a Pull member.
type CountingEndpoint struct {
	Addr     string
	listener net.Listener
	count    atomic.Int64
}

// NewCountingEndpoint listens on 127.0.0.1 until Close.
func NewCountingEndpoint() (*CountingEndpoint, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c := &CountingEndpoint{Addr: l.Addr().String(), listener: l}
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			c.count.Add(1)
			_ = conn.Close()
		}
	}()
	return c, nil
}

// Connections is how many connections were made so far.
func (c *CountingEndpoint) Connections() int64 { return c.count.Load() }

// Close stops listening.
func (c *CountingEndpoint) Close() error { return c.listener.Close() }
