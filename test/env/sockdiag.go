package env

import (
	"encoding/binary"
	"fmt"
	"net"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// The guard's list of TCP sockets, from the kernel's socket diagnostics in one request. The
// kernel walks its whole table of connections (262,144 buckets on a 24 GiB machine) for every
// dump it answers, however few sockets there are: that walk is the cost of a sample. A request
// per address family (SOCK_DIAG_BY_FAMILY, what vishvananda/netlink sends) walks it twice; the
// older TCPDIAG_GETSOCK request, which that library does not send, answers IPv4 and IPv6 in
// one walk.

// tcpDiagGetSock is TCPDIAG_GETSOCK (linux/inet_diag.h).
const tcpDiagGetSock = 18

// Sizes and offsets of linux/inet_diag.h's structs: inet_diag_req (the request of
// TCPDIAG_GETSOCK) and inet_diag_msg (each socket of the answer).
const (
	inetDiagReqLen    = 60 // family, src_len, dst_len, ext, inet_diag_sockid (48), states, dbs
	inetDiagReqStates = 52
	inetDiagMsgLen    = 72
	msgDestPort       = 6  // in the sockid, big-endian
	msgDest           = 24 // 16 bytes; the first 4 for IPv4
	msgInode          = 68
)

// tcpSockets lists the machine's TCP sockets of both address families, in every state.
func tcpSockets() ([]socketEntry, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_INET_DIAG)
	if err != nil {
		return nil, fmt.Errorf("opening a socket diagnostics socket: %w", err)
	}
	defer unix.Close(fd)
	req := make([]byte, unix.NLMSG_HDRLEN+inetDiagReqLen)
	binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
	binary.NativeEndian.PutUint16(req[4:], tcpDiagGetSock)
	binary.NativeEndian.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	binary.NativeEndian.PutUint32(req[8:], 1)                                            // sequence number
	req[unix.NLMSG_HDRLEN] = unix.AF_UNSPEC                                              // both families
	binary.NativeEndian.PutUint32(req[unix.NLMSG_HDRLEN+inetDiagReqStates:], ^uint32(0)) // every state
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, fmt.Errorf("asking for the TCP sockets: %w", err)
	}
	var out []socketEntry
	buf := make([]byte, 1<<16)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return nil, fmt.Errorf("reading the TCP sockets: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return nil, fmt.Errorf("reading the TCP sockets: %w", err)
		}
		for _, m := range msgs {
			switch {
			case m.Header.Type == unix.NLMSG_DONE:
				return out, nil
			case m.Header.Type == unix.NLMSG_ERROR:
				return nil, fmt.Errorf("the kernel refused the TCP sockets' dump: %w", syscall.Errno(-int32(binary.NativeEndian.Uint32(m.Data))))
			case len(m.Data) < inetDiagMsgLen:
				return nil, fmt.Errorf("a TCP socket's record of %d bytes, shorter than %d", len(m.Data), inetDiagMsgLen)
			}
			out = append(out, tcpSocketEntry(m.Data))
		}
	}
}

// tcpSocketEntry reads one inet_diag_msg.
func tcpSocketEntry(msg []byte) socketEntry {
	s := socketEntry{proto: "tcp", remote: net.IP(append([]byte(nil), msg[msgDest:msgDest+net.IPv6len]...)),
		port: binary.BigEndian.Uint16(msg[msgDestPort:]), inode: strconv.FormatUint(uint64(binary.NativeEndian.Uint32(msg[msgInode:])), 10)}
	switch msg[0] {
	case unix.AF_INET:
		s.remote = s.remote[:net.IPv4len]
	case unix.AF_INET6:
		s.proto = "tcp6"
	}
	return s
}
