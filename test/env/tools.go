package env

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// ErrToolsMissing means a binary of the environment or the KWOK stages are not installed;
// `make tools` installs them.
var ErrToolsMissing = errors.New("local environment tools missing (run `make tools`)")

const (
	modulePath  = "github.com/karmadaflow/karmadaflow"
	kwokModule  = "sigs.k8s.io/kwok@v0.8.0"
	binEtcd     = "etcd"
	binAPI      = "kube-apiserver"
	binKCM      = "kube-controller-manager"
	binSched    = "kube-scheduler"
	binKWOK     = "kwok"
	binTemporal = "temporal"
)

var requiredBinaries = []string{binEtcd, binAPI, binKCM, binSched, binKWOK, binTemporal}

// kwokStageDirs are the stage sets KWOK needs: nodes become Ready fast and keep a lease,
// pods become Ready fast.
var kwokStageDirs = []string{
	"kustomize/stage/node/fast",
	"kustomize/stage/node/heartbeat-with-lease",
	"kustomize/stage/pod/fast",
}

// RepoRoot walks up from the working directory to the karmadaflow go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if isModuleRoot(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module %s above the working directory", modulePath)
		}
		dir = parent
	}
}

func isModuleRoot(goMod string) bool {
	f, err := os.Open(goMod)
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if fields := strings.Fields(s.Text()); len(fields) == 2 && fields[0] == "module" {
			return fields[1] == modulePath
		}
	}
	return false
}

// checkBinaries reports which of the named binaries are missing from binDir.
func checkBinaries(binDir string, names []string) error {
	var missing []string
	for _, name := range names {
		st, err := os.Stat(filepath.Join(binDir, name))
		if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s not in %s", ErrToolsMissing, strings.Join(missing, ", "), binDir)
	}
	return nil
}

// kwokModuleDir is the KWOK module in the Go module cache; `go install` of kwok puts it there.
func kwokModuleDir() (string, error) {
	cache := ""
	if out, err := exec.Command("go", "env", "GOMODCACHE").Output(); err == nil {
		cache = strings.TrimSpace(string(out))
	}
	if cache == "" {
		cache = os.Getenv("GOMODCACHE")
	}
	if cache == "" {
		if home, err := os.UserHomeDir(); err == nil {
			cache = filepath.Join(home, "go", "pkg", "mod")
		}
	}
	dir := filepath.Join(cache, kwokModule)
	if _, err := os.Stat(filepath.Join(dir, kwokStageDirs[0])); err != nil {
		return "", fmt.Errorf("%w: KWOK stages of %s not found in the module cache (%s)", ErrToolsMissing, kwokModule, dir)
	}
	return dir, nil
}

// kwokStages concatenates the stage YAML files of the KWOK module, for its --config file.
func kwokStages() ([]byte, error) {
	moduleDir, err := kwokModuleDir()
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	for _, sub := range kwokStageDirs {
		files, err := filepath.Glob(filepath.Join(moduleDir, sub, "*.yaml"))
		if err != nil {
			return nil, err
		}
		for _, file := range files {
			if filepath.Base(file) == "kustomization.yaml" {
				continue
			}
			data, err := os.ReadFile(file)
			if err != nil {
				return nil, fmt.Errorf("read KWOK stage: %w", err)
			}
			out.WriteString("---\n")
			out.Write(bytes.TrimPrefix(data, []byte("---\n")))
			if !bytes.HasSuffix(data, []byte("\n")) {
				out.WriteByte('\n')
			}
		}
	}
	if out.Len() == 0 {
		return nil, fmt.Errorf("%w: no KWOK stage files under %s", ErrToolsMissing, moduleDir)
	}
	return out.Bytes(), nil
}

// portPool hands out free loopback ports. A port stays reserved (its listener open) until
// the process that binds it is about to start, so nothing else that asks the kernel for a free
// port (such as the Temporal dev server for its internal services) can take it meanwhile.
type portPool struct {
	mu   sync.Mutex
	held map[int]net.Listener
}

// reserve returns n distinct free loopback ports, held until released.
func (pp *portPool) reserve(n int) ([]int, error) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if pp.held == nil {
		pp.held = map[int]net.Listener{}
	}
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free loopback port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		pp.held[port] = l
		ports = append(ports, port)
	}
	return ports, nil
}

// reserveBelow returns n distinct free loopback ports from [lo, hi), held until released,
// for servers that cannot use ports of the kernel's ephemeral range (32768 and up by default).
func (pp *portPool) reserveBelow(n, lo, hi int) ([]int, error) {
	var ports []int
	for attempt := 0; len(ports) < n; attempt++ {
		if attempt == 100*n {
			pp.release(ports...)
			return nil, fmt.Errorf("no %d free loopback ports in [%d, %d)", n, lo, hi)
		}
		port := lo + rand.IntN(hi-lo)
		if slices.Contains(ports, port) || pp.hold(port) != nil {
			continue
		}
		ports = append(ports, port)
	}
	return ports, nil
}

// hold reserves a given port, failing if something already listens on it.
func (pp *portPool) hold(port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("port %d is not free: %w", port, err)
	}
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if pp.held == nil {
		pp.held = map[int]net.Listener{}
	}
	pp.held[port] = l
	return nil
}

// release frees ports for the process about to bind them; unknown ports are ignored.
func (pp *portPool) release(ports ...int) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	for _, port := range ports {
		if l, ok := pp.held[port]; ok {
			l.Close()
			delete(pp.held, port)
		}
	}
}

func (pp *portPool) releaseAll() {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	for port, l := range pp.held {
		l.Close()
		delete(pp.held, port)
	}
}
