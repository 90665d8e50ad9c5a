package testenv

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

// Ports handed out by FreeAddr lie below Linux's default ephemeral range
// (32768–60999), so that no listener on port 0 and no outgoing connection
// can take one between the moment a test picks it and the moment a process
// it starts binds it — or while that process restarts.
const (
	portLow  = 20000
	portHigh = 32000
)

var (
	portsMu  sync.Mutex
	reserved = map[int]*os.File{} // held for the life of the process
)

// FreeAddr returns a loopback host:port that is free now and that no other
// caller — in this process or in another test process using FreeAddr — gets
// while this process lives. The reservation is an flock on a file under the
// temp dir, released by the kernel when the process exits.
func FreeAddr() (string, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	dir := filepath.Join(os.TempDir(), "kcd-test-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return "", fmt.Errorf("port reservations: %w", err)
	}
	start := portLow + rand.IntN(portHigh-portLow)
	for i := range portHigh - portLow {
		port := portLow + (start-portLow+i)%(portHigh-portLow)
		if reserved[port] != nil {
			continue
		}
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			return "", fmt.Errorf("port reservations: %w", err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				continue // another test process holds it
			}
			return "", fmt.Errorf("port reservations: lock %d: %w", port, err)
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			f.Close() // in use by something else
			continue
		}
		ln.Close()
		reserved[port] = f
		return addr, nil
	}
	return "", errors.New("no free loopback port found")
}
