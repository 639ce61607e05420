package env

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Address blocks. The environment's loopback addresses that are not 127.0.0.1 with a port of
// its own (node addresses, where NodePorts and KWOK's kubelet endpoints are served, and the
// played pods' and Services' addresses, see test/env/podrunner) come from a block that no
// other environment on the machine holds, so that end-to-end suites can run side by side.
// Block n holds 127.<4n>.0.0/16 for nodes and, for the pod runner, 127.<4n+1>.0.0/16 and
// 127.<4n+2>.0.0/16; block 0 is 127.0.0.10 and on, as environments always had.
//
// A block is held by an exclusive lock (flock) on a file of the temporary directory, taken
// at Start and released at Stop, or by the kernel when the process ends, however it ends.

// addressBlocks is how many environments may run side by side on one machine.
const addressBlocks = 16

// addressBlock is the block an environment holds.
type addressBlock struct {
	n    int
	lock *os.File // holds the flock until closed
}

// takeAddressBlock holds the first block no other environment holds.
func takeAddressBlock() (*addressBlock, error) {
	for n := range addressBlocks {
		path := filepath.Join(os.TempDir(), fmt.Sprintf("karmadaflow-env-address-block-%d.lock", n))
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("address block %d: %w", n, err)
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return &addressBlock{n: n, lock: f}, nil
		}
		f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("address block %d: lock %s: %w", n, path, err)
		}
	}
	return nil, fmt.Errorf("all %d address blocks are held by other environments of this machine", addressBlocks)
}

// nodeIP is the node address of the environment's i-th cluster with nodes: 127.<4n>.0.10 for
// the host (i = 0), 127.<4n>.0.11 for member1, and so on.
func (b *addressBlock) nodeIP(i int) string { return fmt.Sprintf("127.%d.0.%d", 4*b.n, 10+i) }

// release lets another environment take the block.
func (b *addressBlock) release() {
	if b != nil && b.lock != nil {
		b.lock.Close()
		b.lock = nil
	}
}
