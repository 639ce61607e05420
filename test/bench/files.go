package bench

import (
	"io"
	"os"
	"path/filepath"
)

// CopyTail copies at most the last limit bytes of src to dst, e.g. to keep a log of an
// environment whose directory is removed.
func CopyTail(src, dst string, limit int64) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if info, err := in.Stat(); err == nil && info.Size() > limit {
		if _, err := in.Seek(info.Size()-limit, io.SeekStart); err != nil {
			return err
		}
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
