package fsm

import (
	"os"
	"strings"
)

// currentBootID identifies this boot of the machine: it changes with every
// restart of the kernel, which is when unsynced writes can be lost.
func currentBootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
