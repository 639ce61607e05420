package env

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// The guard's list of TCP sockets, from the kernel's socket diagnostics in one request. The
// kernel walks its whole table of connections (262,144 buckets on a 24 GiB machine) for every
// dump it answers, however few sockets there are: that walk is the cost of a sample. A request
// per address family (SOCK_DIAG_BY_FAMILY, what vishvananda/netlink sends) walks it twice; the
// older TCPDIAG_GETSOCK request, which that library does not send, answers IPv4 and IPv6 in
// one walk. The request carries a filter, so the kernel answers only the sockets whose remote
// address the guard must look at: without it, each sample copied out every connection of the
// environment (3,200 with 20 members) to be dropped here.

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

// The filter's bytecode (linux/inet_diag.h): INET_DIAG_REQ_BYTECODE, the attribute that carries
// it; inet_diag_bc_op's codes; inet_diag_hostcond's size without its address.
const (
	inetDiagReqBytecode = 1
	inetDiagBCJump      = 1
	inetDiagBCDestCond  = 8
	bcOpLen             = 4
	bcHostCondLen       = 8
)

// tcpSockets lists the machine's TCP sockets of both address families, in every state, that
// pass filter (socket diagnostics bytecode, skipRemotes; none passes every socket).
func tcpSockets(filter []byte) ([]socketEntry, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_INET_DIAG)
	if err != nil {
		return nil, fmt.Errorf("opening a socket diagnostics socket: %w", err)
	}
	defer unix.Close(fd)
	req := make([]byte, unix.NLMSG_HDRLEN+inetDiagReqLen, unix.NLMSG_HDRLEN+inetDiagReqLen+unix.SizeofNlAttr+len(filter))
	if len(filter) > 0 {
		req = binary.NativeEndian.AppendUint16(req, uint16(unix.SizeofNlAttr+len(filter)))
		req = binary.NativeEndian.AppendUint16(req, inetDiagReqBytecode)
		req = append(req, filter...)
	}
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

// skipRemotes is the bytecode of a filter that leaves out the sockets whose remote address is
// in one of prefixes. The kernel runs it as a chain of forward jumps, and a socket is answered
// when the chain ends exactly at the end of the code. Per prefix: a condition on the remote
// address that, when it holds, goes on to a jump past the end (the socket is left out), and
// otherwise skips that jump to the next prefix. The kernel's check of the code follows the
// "yes" offsets, so each must lead to the next operation; an IPv4 prefix also holds for the
// IPv4-mapped addresses of IPv6 sockets.
func skipRemotes(prefixes []netip.Prefix) []byte {
	var code []byte
	var jumps []int // offsets of the jumps past the end
	for _, p := range prefixes {
		addr := p.Addr().AsSlice()
		family := byte(unix.AF_INET6)
		if p.Addr().Is4() {
			family = unix.AF_INET
		}
		condLen := bcOpLen + bcHostCondLen + len(addr)
		code = append(code, inetDiagBCDestCond, byte(condLen))
		code = binary.NativeEndian.AppendUint16(code, uint16(condLen+bcOpLen))
		code = append(code, family, byte(p.Bits()), 0, 0)
		code = binary.NativeEndian.AppendUint32(code, ^uint32(0)) // any port
		code = append(code, addr...)
		jumps = append(jumps, len(code))
		code = append(code, inetDiagBCJump, bcOpLen, 0, 0)
	}
	for _, at := range jumps {
		binary.NativeEndian.PutUint16(code[at+2:], uint16(len(code)-at+bcOpLen))
	}
	return code
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
