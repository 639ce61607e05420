package env

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// The local environment and everything tested against it may connect to loopback addresses
// only (127.0.0.0/8, ::1): node addresses, pod and Service IPs are data, never destinations.
// The guard below watches for the opposite, two ways:
//   - it samples the kernel's socket tables (TCP and UDP, IPv4 and IPv6) and names every
//     connected socket with a remote address outside loopback that belongs to this process or
//     one of its descendants (the environment, the worker and starter a test runs, their
//     children);
//   - it reads the environment's logs for dial and lookup errors naming such an address
//     (a DNS query to the machine's resolver is usually over between two samples).

// allowedRemotes are the remote addresses the guard lets pass: loopback, and none (a socket
// that listens or is not connected). The kernel leaves their TCP sockets out of its answer.
var allowedRemotes = []netip.Prefix{
	netip.MustParsePrefix("127.0.0.0/8"), // and, for IPv6 sockets, ::ffff:127.0.0.0/104
	netip.MustParsePrefix("0.0.0.0/32"),
	netip.MustParsePrefix("::1/128"),
	netip.MustParsePrefix("::/128"),
}

// guardFilter is the kernel's filter for allowedRemotes, built once for every sample.
var guardFilter = skipRemotes(allowedRemotes)

// guardInterval is how often the socket tables are sampled.
const guardInterval = 50 * time.Millisecond

// ConnectionGuard records the connections of this process tree that leave loopback. Every
// Env has one; StartConnectionGuard starts one for processes started otherwise.
type ConnectionGuard struct {
	root int // the process whose descendants are watched

	mu      sync.Mutex
	seen    map[string]bool // inodes already looked at
	outside []string        // "<process> (pid N) -> <proto> <address>"

	stop chan struct{}
	done chan struct{}
}

// StartConnectionGuard watches this process and its descendants until Close.
func StartConnectionGuard() *ConnectionGuard {
	g := &ConnectionGuard{root: os.Getpid(), seen: map[string]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	go g.run()
	return g
}

func (g *ConnectionGuard) run() {
	defer close(g.done)
	ticker := time.NewTicker(guardInterval)
	defer ticker.Stop()
	for {
		g.sample()
		select {
		case <-g.stop:
			return
		case <-ticker.C:
		}
	}
}

// Close ends the sampling.
func (g *ConnectionGuard) Close() {
	select {
	case <-g.stop:
	default:
		close(g.stop)
		<-g.done
	}
}

// sample looks once at every socket table for connected sockets with a remote address
// outside loopback, and attributes the new ones to their process.
func (g *ConnectionGuard) sample() {
	var candidates []socketEntry
	entries, err := sockets()
	if err != nil {
		g.mu.Lock()
		if !slices.Contains(g.outside, err.Error()) { // once: the guard cannot see what it checks
			g.outside = append(g.outside, err.Error())
		}
		g.mu.Unlock()
	}
	for _, s := range entries {
		if s.remote.IsUnspecified() || s.remote.IsLoopback() {
			continue
		}
		g.mu.Lock()
		fresh := !g.seen[s.inode]
		g.seen[s.inode] = true
		g.mu.Unlock()
		if fresh {
			candidates = append(candidates, s)
		}
	}
	if len(candidates) == 0 {
		return
	}
	owners := socketOwners()
	for _, s := range candidates {
		pid, ok := owners[s.inode]
		if !ok || !descendsFrom(pid, g.root) {
			continue
		}
		g.mu.Lock()
		g.outside = append(g.outside, fmt.Sprintf("%s (pid %d) -> %s %s", processName(pid), pid, s.proto,
			net.JoinHostPort(s.remote.String(), strconv.Itoa(int(s.port)))))
		g.mu.Unlock()
	}
}

// Outside returns the connections outside loopback seen so far, and the socket tables the guard
// could not read, after one more sample.
func (g *ConnectionGuard) Outside() []string {
	g.sample()
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.outside)
}

type socketEntry struct {
	proto  string
	remote net.IP
	port   uint16
	inode  string
}

// sockets are the TCP and UDP sockets of the machine, IPv4 and IPv6, as the kernel's socket
// diagnostics (netlink) list them: TCP in one request (sockdiag.go says why), UDP per family
// with vishvananda/netlink. A table that cannot be read is an error: the guard would otherwise
// pass without looking.
func sockets() ([]socketEntry, error) {
	out, err := tcpSockets(guardFilter)
	var errs []error
	if err != nil {
		errs = append(errs, fmt.Errorf("the guard cannot list the TCP sockets: %w", err))
	}
	for _, family := range []struct {
		proto  string
		family uint8
	}{{"udp", unix.AF_INET}, {"udp6", unix.AF_INET6}} {
		udp, err := netlink.SocketDiagUDP(family.family)
		if err != nil {
			errs = append(errs, fmt.Errorf("the guard cannot list the %s sockets: %w", family.proto, err))
			continue
		}
		for _, s := range udp {
			out = append(out, socketEntry{proto: family.proto, remote: s.ID.Destination, port: s.ID.DestinationPort,
				inode: strconv.FormatUint(uint64(s.INode), 10)})
		}
	}
	return out, errors.Join(errs...)
}

// socketOwners maps socket inodes to the pid holding them.
func socketOwners() map[string]int {
	owners := map[string]int{}
	procs, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range procs {
		link, err := os.Readlink(fd)
		if err != nil || !strings.HasPrefix(link, "socket:[") {
			continue
		}
		pid, err := strconv.Atoi(strings.Split(fd, "/")[2])
		if err != nil {
			continue
		}
		owners[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = pid
	}
	return owners
}

// descendsFrom reports whether pid is root or one of its descendants.
func descendsFrom(pid, root int) bool {
	for range 64 {
		if pid == root {
			return true
		}
		if pid <= 1 {
			return false
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return false
		}
		// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
		rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
		fields := strings.Fields(rest)
		if len(fields) < 2 {
			return false
		}
		if pid, err = strconv.Atoi(fields[1]); err != nil {
			return false
		}
	}
	return false
}

func processName(pid int) string {
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(comm))
}

// outsideAddressInLog matches Go's dial and lookup errors that name an address outside
// loopback: "dial tcp 10.1.2.3:443: ..." and "lookup foo.svc on 10.0.0.53:53: ...".
var outsideAddressInLog = regexp.MustCompile(`(?:dial (?:tcp|udp)[46]? |lookup \S+ on )\[?([0-9a-fA-F.:]+?)\]?:\d+`)

// OutsideAddressesInLogs returns the log lines of dir's *.log files that name a dial or DNS
// lookup to an address outside loopback.
func OutsideAddressesInLogs(dir string) []string {
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	var out []string
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			continue
		}
		s := bufio.NewScanner(f)
		s.Buffer(make([]byte, 0, 64*1024), 1024*1024)
		for s.Scan() {
			for _, m := range outsideAddressInLog.FindAllStringSubmatch(s.Text(), -1) {
				if ip := net.ParseIP(m[1]); ip != nil && !ip.IsLoopback() {
					out = append(out, filepath.Base(file)+": "+truncate(s.Text(), 300))
					break
				}
			}
		}
		f.Close()
	}
	return out
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// OutsideConnections returns every connection outside loopback that the environment, or a
// process started by this one (the worker and starter of a test), was seen to make so far,
// and every log line of the environment naming a dial or lookup to such an address. Tests
// fail when it is not empty.
func (e *Env) OutsideConnections() []string {
	var out []string
	if e.guard != nil {
		out = e.guard.Outside()
	}
	out = append(out, OutsideAddressesInLogs(filepath.Join(e.Dir, "logs"))...)
	// The logs of the pods PlayPods runs.
	return append(out, OutsideAddressesInLogs(filepath.Join(e.PodsDir(), "logs"))...)
}

// CheckLoopbackOnly is OutsideConnections as an error, for a TestMain to return after its
// tests ran.
func (e *Env) CheckLoopbackOnly() error {
	outside := e.OutsideConnections()
	if len(outside) == 0 {
		return nil
	}
	return fmt.Errorf("connections outside 127.0.0.0/8:\n  %s", strings.Join(outside, "\n  "))
}

// LoopbackCheckedExit is the exit code of a test binary whose tests ended with code: 1, after
// printing them, when connections outside loopback were seen, else code. TestMain functions
// return it so that every end-to-end package asserts the network rule.
func (e *Env) LoopbackCheckedExit(code int) int {
	if err := e.CheckLoopbackOnly(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	return code
}
