package bench

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's CPU times (100 on Linux everywhere).
const clockTicks = 100

// Memory is a process's resident set from /proc/<pid>/status.
type Memory struct {
	PeakRSS, RSS int64 // bytes (VmHWM, VmRSS)
}

// ReadMemory reads VmHWM and VmRSS of pid.
func ReadMemory(pid int) (Memory, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, err
	}
	var m Memory
	for line := range strings.SplitSeq(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(fields[1], 10, 64)
		switch fields[0] {
		case "VmHWM:":
			m.PeakRSS = kb * 1024
		case "VmRSS:":
			m.RSS = kb * 1024
		}
	}
	return m, nil
}

// parentPID is the parent of pid, 0 if unknown.
func parentPID(pid int) int {
	fields, err := statFields(pid)
	if err != nil || len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

// statFields are the fields of /proc/<pid>/stat after the command name (state first).
func statFields(pid int) ([]string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	// The command name (field 2) may hold spaces and parentheses.
	s := string(data)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:]), nil
}

// CPUTime is the user+system CPU time pid has used so far.
func CPUTime(pid int) (time.Duration, error) {
	fields, err := statFields(pid)
	if err != nil {
		return 0, err
	}
	if len(fields) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// MachineCPU is the machine's busy and total CPU time from /proc/stat.
type MachineCPU struct{ Busy, Total time.Duration }

// ReadMachineCPU reads the aggregate line of /proc/stat.
func ReadMachineCPU() (MachineCPU, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return MachineCPU{}, err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		return MachineCPU{}, fmt.Errorf("unexpected /proc/stat: %q", line)
	}
	var total, idle int64
	for i, f := range fields[1:] {
		v, _ := strconv.ParseInt(f, 10, 64)
		total += v
		if i == 3 || i == 4 { // idle, iowait
			idle += v
		}
	}
	tick := time.Second / clockTicks
	return MachineCPU{Busy: time.Duration(total-idle) * tick, Total: time.Duration(total) * tick}, nil
}

// Utilization is the busy fraction of the machine between two readings.
func Utilization(before, after MachineCPU) float64 {
	if after.Total <= before.Total {
		return 0
	}
	return float64(after.Busy-before.Busy) / float64(after.Total-before.Total)
}

// LoadAverage is the first three fields of /proc/loadavg.
func LoadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return err.Error()
	}
	fields := strings.Fields(string(data))
	return strings.Join(fields[:min(3, len(fields))], " ")
}

// ForeignProcesses counts, by binary, the processes of local environments, services and
// test binaries that are not children of this program (another test run or `make run` on
// the same machine), e.g. "kube-apiserver 5, etcd 1".
func ForeignProcesses() string {
	interesting := []string{"kube-apiserver", "etcd", "temporal", "kube-controller-manager", "kwok", "worker", "starter"}
	counts := map[string]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || parentPID(pid) == os.Getpid() {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(data) == 0 {
			continue
		}
		name := filepath.Base(strings.SplitN(string(data), "\x00", 2)[0])
		if slices.Contains(interesting, name) || strings.HasSuffix(name, ".test") {
			counts[name]++
		}
	}
	if len(counts) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, counts[k]))
	}
	return strings.Join(parts, ", ")
}

// FormatBytes prints a byte count in MiB, or KiB below 1 MiB.
func FormatBytes(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// ProcessCPU is the CPU time used so far by every child of this process and every process
// whose command line mentions dir (the environment's processes and the service), keyed by a
// readable name: the binary, and for per-cluster components the cluster
// ("kube-apiserver/member1").
func ProcessCPU(dir string, clusters []string) map[string]time.Duration {
	out := map[string]time.Duration{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
		cmdline := strings.Join(args, " ")
		if len(args) == 0 || (!strings.Contains(cmdline, dir) && parentPID(pid) != os.Getpid()) {
			continue
		}
		name := filepath.Base(args[0])
		switch name {
		case "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok":
			for _, c := range clusters {
				if strings.Contains(cmdline, filepath.Join(dir, c)+"/") || strings.Contains(cmdline, filepath.Join(dir, c)+".") ||
					strings.Contains(cmdline, "--etcd-prefix=/"+c+" ") {
					name += "/" + c
					break
				}
			}
		}
		if cpu, err := CPUTime(pid); err == nil {
			out[name] += cpu
		}
	}
	return out
}

// processTime is a process's command name and the CPU time it has used so far.
type processTime struct {
	name string
	cpu  time.Duration
}

// processTimes reads processTime of every process, by pid.
func processTimes() map[int]processTime {
	out := map[int]processTime{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cpu, err := CPUTime(pid)
		if err != nil {
			continue
		}
		comm, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		out[pid] = processTime{name: strings.TrimSpace(string(comm)), cpu: cpu}
	}
	return out
}

// BusiestProcesses watches every process for window and names the ones that used more than
// 5% of a core, busiest first, e.g. "compile 95%, go 20%"; "none" if there are none.
func BusiestProcesses(ctx context.Context, window time.Duration) string {
	before := processTimes()
	select {
	case <-ctx.Done():
		return ctx.Err().Error()
	case <-time.After(window):
	}
	type use struct {
		name  string
		share float64
	}
	var uses []use
	for pid, p := range processTimes() {
		if share := float64(p.cpu-before[pid].cpu) / float64(window); share > 0.05 {
			uses = append(uses, use{fmt.Sprintf("%s[%d]", p.name, pid), share})
		}
	}
	if len(uses) == 0 {
		return "none"
	}
	slices.SortFunc(uses, func(a, b use) int { return int(1000 * (b.share - a.share)) })
	var parts []string
	for _, u := range uses[:min(6, len(uses))] {
		parts = append(parts, fmt.Sprintf("%s %.0f%%", u.name, 100*u.share))
	}
	return strings.Join(parts, ", ")
}
