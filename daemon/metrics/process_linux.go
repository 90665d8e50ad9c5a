package metrics

import (
	"bytes"
	"encoding/binary"
	"os"
	"strconv"
	"syscall"
)

// userHZ is the unit of the times in /proc/self/stat (USER_HZ, 100 on
// every Linux platform Go supports).
const userHZ = 100

var pageSize = float64(os.Getpagesize())

// readFile reads path into *buf (grown as needed, kept for the next read)
// without the allocations of os.ReadFile.
func readFile(path string, buf *[]byte) ([]byte, bool) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	defer syscall.Close(fd)
	b := (*buf)[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
			if cap(b) < 1024 {
				b = make([]byte, 0, 1024)
			}
		}
		n, err := syscall.Read(fd, b[len(b):cap(b)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			*buf = b
			return nil, false
		}
		if n == 0 {
			*buf = b
			return b, true
		}
		b = b[:len(b)+n]
	}
}

// readProcStat parses /proc/self/stat (proc(5)): the fields after the
// command, which is in parentheses and may hold anything, so parsing starts
// after its last ')'.
func readProcStat(buf *[]byte) (procStat, bool) {
	b, ok := readFile("/proc/self/stat", buf)
	if !ok {
		return procStat{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	// Field 3 (state) is the first after ") "; we want 14 utime, 15 stime,
	// 22 starttime, 23 vsize, 24 rss.
	var f [25]uint64
	field := 3
	rest := b[i+1:]
	for field <= 24 {
		for len(rest) > 0 && rest[0] == ' ' {
			rest = rest[1:]
		}
		j := bytes.IndexByte(rest, ' ')
		if j < 0 {
			j = len(rest)
		}
		if j == 0 {
			return procStat{}, false
		}
		if field >= 14 {
			v, err := strconv.ParseUint(string(rest[:j]), 10, 64) // no allocation: the conversion does not escape
			if err != nil {
				return procStat{}, false
			}
			f[field] = v
		}
		rest = rest[j:]
		field++
	}
	return procStat{
		cpuSeconds: float64(f[14]+f[15]) / userHZ,
		startTicks: f[22],
		vsizeBytes: float64(f[23]),
		rssBytes:   float64(f[24]) * pageSize,
	}, true
}

// bootTime is the btime line of /proc/stat: the boot time in Unix seconds.
func bootTime() (uint64, bool) {
	var buf []byte
	b, ok := readFile("/proc/stat", &buf)
	if !ok {
		return 0, false
	}
	for len(b) > 0 {
		line := b
		if j := bytes.IndexByte(b, '\n'); j >= 0 {
			line, b = b[:j], b[j+1:]
		} else {
			b = nil
		}
		if v, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			n, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// countFDs counts the entries of /proc/self/fd from its raw directory
// records, without a string per descriptor. The descriptor it opens to
// read the directory is not counted.
func countFDs(buf *[]byte) (int, bool) {
	fd, err := syscall.Open("/proc/self/fd", syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return 0, false
	}
	defer syscall.Close(fd)
	if cap(*buf) < 8192 {
		*buf = make([]byte, 8192)
	}
	b := (*buf)[:cap(*buf)]
	n := 0
	for {
		m, err := syscall.Getdents(fd, b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, false
		}
		if m <= 0 {
			return n - 1, true // less the one opened here
		}
		// linux_dirent64: ino u64, off i64, reclen u16, type u8, name.
		for off := 0; off+19 <= m; {
			reclen := int(binary.NativeEndian.Uint16(b[off+16:]))
			if reclen == 0 {
				break
			}
			if name := b[off+19:]; name[0] != '.' {
				n++
			}
			off += reclen
		}
	}
}
