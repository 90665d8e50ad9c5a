package testenv

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

func TestFreeAddrReservesPortsOutsideTheEphemeralRange(t *testing.T) {
	seen := map[string]bool{}
	for range 20 {
		addr, err := FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		if seen[addr] {
			t.Fatalf("FreeAddr handed out %s twice", addr)
		}
		seen[addr] = true
		_, p, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		port, _ := strconv.Atoi(p)
		if port < portLow || port >= portHigh {
			t.Fatalf("port %d outside [%d, %d)", port, portLow, portHigh)
		}
		// Another process (here: another open file description) cannot
		// take the reservation.
		f, err := os.Open(filepath.Join(os.TempDir(), "kcd-test-ports", p))
		if err != nil {
			t.Fatal(err)
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			t.Fatalf("reservation of %s not held: flock = %v", addr, err)
		}
		// And the port is bindable by the test's process.
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("reserved %s is not free: %v", addr, err)
		}
		ln.Close()
	}
}
