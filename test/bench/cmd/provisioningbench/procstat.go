package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/karmadaflow/karmadaflow/test/bench"
)

// The pod runner runs each container as a process whose command line names files under its
// pod's directory, <PodsDir>/<namespace>/<pod>/ (a volume rewritten there). It starts them
// through `unshare ... sh -c '...; exec "$0" "$@"' <binary> ...`, so once the exec happened
// the pid is the binary's; the wrappers and the short-lived mount/hostname commands they run
// are skipped.
var wrappers = map[string]bool{"unshare": true, "sh": true, "mount": true, "hostname": true}

// procKey identifies one process across pid reuse: its pid and its start time.
type procKey struct {
	pid   int
	start uint64
}

// tracker follows the played processes through /proc and the CPU time each pod has used,
// processes that ended (a restarted container, an exec probe) counted with their last sample.
type tracker struct {
	prefix string // <PodsDir>/

	mu    sync.Mutex
	cpu   map[procKey]time.Duration // last CPU time seen of every process seen
	owner map[procKey]string        // its pod, "<namespace>/<pod>"
	live  map[string][]int          // pod -> pids alive at the last scan
}

func newTracker(podsDir string) *tracker {
	return &tracker{prefix: filepath.Clean(podsDir) + "/", cpu: map[procKey]time.Duration{}, owner: map[procKey]string{}, live: map[string][]int{}}
}

// run scans every interval until ctx ends.
func (t *tracker) run(ctx context.Context, interval time.Duration) {
	for {
		t.scan()
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

// scan reads every played process's CPU time once.
func (t *tracker) scan() {
	entries, _ := os.ReadDir("/proc")
	live := map[string][]int{}
	seen := map[procKey]time.Duration{}
	owners := map[procKey]string{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(data) == 0 {
			continue
		}
		args := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
		if wrappers[filepath.Base(args[0])] {
			continue
		}
		pod := t.podOf(strings.Join(args, " "))
		if pod == "" {
			continue
		}
		cpu, start, err := readStat(pid)
		if err != nil {
			continue
		}
		k := procKey{pid, start}
		seen[k], owners[k] = cpu, pod
		live[pod] = append(live[pod], pid)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, cpu := range seen { // scans may overlap: CPU time only grows
		t.cpu[k], t.owner[k] = max(t.cpu[k], cpu), owners[k]
	}
	t.live = live
}

// podOf is "<namespace>/<pod>" of the first path under a pod's directory in cmdline, "" if
// there is none.
func (t *tracker) podOf(cmdline string) string {
	for rest := cmdline; ; {
		i := strings.Index(rest, t.prefix)
		if i < 0 {
			return ""
		}
		rest = rest[i+len(t.prefix):]
		parts := strings.SplitN(rest, "/", 3)
		if len(parts) == 3 && parts[0] != "logs" && parts[0] != "hostpath" && parts[0] != "claims" {
			return parts[0] + "/" + parts[1]
		}
	}
}

// podCPU is the CPU time every process of pod has used so far.
func (t *tracker) podCPU(pod string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	var total time.Duration
	for k, cpu := range t.cpu {
		if t.owner[k] == pod {
			total += cpu
		}
	}
	return total
}

// livePIDs are the processes of pods alive at the last scan, by pod; namespace "" for all.
func (t *tracker) livePIDs(namespace string) map[string][]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string][]int{}
	for pod, pids := range t.live {
		if namespace == "" || strings.HasPrefix(pod, namespace+"/") {
			out[pod] = pids
		}
	}
	return out
}

// readStat reads the user+system CPU time and the start time (in clock ticks since boot) of
// pid from /proc/<pid>/stat.
func readStat(pid int) (time.Duration, uint64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // state first
	if len(fields) < 20 {
		return 0, 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	start, _ := strconv.ParseUint(fields[19], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100, start, nil // USER_HZ is 100
}

// memory is the resident memory of a set of processes.
type memory struct {
	rss, peak, pss int64 // bytes: VmRSS, VmHWM, Pss (smaps_rollup) summed
	procs          int
}

// readMemory sums the memory of pids; processes gone meanwhile are left out.
func readMemory(pids []int) memory {
	var m memory
	for _, pid := range pids {
		mem, err := bench.ReadMemory(pid)
		if err != nil {
			continue
		}
		m.rss += mem.RSS
		m.peak += mem.PeakRSS
		m.pss += readPSS(pid)
		m.procs++
	}
	return m
}

// readPSS is the proportional set size of pid: its resident memory with each page shared by
// k processes counted 1/k (binaries shared by several instances count once overall).
func readPSS(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if fields := strings.Fields(line); len(fields) >= 2 && fields[0] == "Pss:" {
			kb, _ := strconv.ParseInt(fields[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// machineMemoryUsed is MemTotal - MemAvailable of /proc/meminfo.
func machineMemoryUsed() int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	values := map[string]int64{}
	for line := range strings.SplitSeq(string(data), "\n") {
		if fields := strings.Fields(line); len(fields) >= 2 {
			values[fields[0]], _ = strconv.ParseInt(fields[1], 10, 64)
		}
	}
	return (values["MemTotal:"] - values["MemAvailable:"]) * 1024
}
