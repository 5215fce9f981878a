package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// LockFileName is the lock a process holds on a data directory while it
// serves (or migrates) the embedded stores in it.
const LockFileName = "seam.lock"

// storeFiles are the embedded stores a data directory may hold.
var storeFiles = []string{"registry.db", "idmap.db", "gate.db"}

// HasStores returns nil when dir holds at least one embedded store, and
// an error naming dir otherwise.
func HasStores(dir string) error {
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("no data directory %s", dir)
	}
	if !info.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	for _, f := range storeFiles {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return nil
		}
	}
	return fmt.Errorf("%s holds no seam store (%s)", dir, strings.Join(storeFiles, ", "))
}

// LockDataDir takes the data directory's lock, creating the directory if
// needed, so two processes never run on the same embedded stores. The
// lock is the kernel's (flock): it is released when the process ends,
// even by kill -9, so a crash leaves nothing to clean up.
func LockDataDir(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory %s: %w", dir, err)
	}
	path := filepath.Join(dir, LockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the lock of data directory %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			who := "another seam"
			if pid := strings.TrimSpace(string(holder)); pid != "" {
				who += " (pid " + pid + ")"
			}
			return nil, fmt.Errorf("data directory %s is in use by %s; stop it, or give this one another --data-dir", dir, who)
		}
		return nil, fmt.Errorf("lock data directory %s: %w", dir, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
