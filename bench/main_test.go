package bench

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/systemtest"
	"github.com/kcd-project/kcd/internal/fstype"
)

var (
	buildOnce sync.Once
	buildDir  string
	kcdBin    string
	buildErr  error
)

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// kcdBinary builds cmd/kcd once per run, for the benchmarks that start
// real processes.
func kcdBinary(b *testing.B) string {
	b.Helper()
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "kcd-bench-"); buildErr != nil {
			return
		}
		kcdBin, buildErr = systemtest.Build(buildDir)
	})
	if buildErr != nil {
		b.Fatal(buildErr)
	}
	return kcdBin
}

// dataDir returns a temporary directory for the benchmark's data, and says
// on stderr which file system it is on: fsync costs nothing on tmpfs.
func dataDir(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	fs := fstype.Of(dir)
	progress("data in %s (file system: %s)", dir, fs)
	if fs == "tmpfs" {
		progress("WARNING: %s is on tmpfs: fsync is free there, the figures will be too good; set TMPDIR to a disk", dir)
	}
	return dir
}

// progress prints a line on stderr, so that benchmark output on stdout
// stays parseable (benchstat) while long benchmarks show what they do.
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}

// percentile returns the p-th percentile (0 < p ≤ 100) of sorted ds, by
// the nearest-rank method.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(p/100*float64(len(sorted))+0.999999) - 1
	return sorted[max(0, min(rank, len(sorted)-1))]
}

func sortDurations(ds []time.Duration) {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
