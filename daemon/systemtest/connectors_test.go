package systemtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/internal/testenv"
)

// TestIntegrationProcessFileStreamKill9: a kcd process on the real Kafka
// broker runs FileStreamSource (file → topic) and FileStreamSink (topic →
// file); it is killed with SIGKILL mid-stream and started again from its
// data dir. Every line reaches the output file, the first copies in input
// order; lines written twice (source and sink resume from their last
// committed offsets) are allowed, lost lines are not.
func TestIntegrationProcessFileStreamKill9(t *testing.T) {
	bin := binary(t)
	brokers := testenv.Require(t, testenv.Kafka)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	dir := t.TempDir()
	n := &Node{
		ID:       1,
		RESTAddr: mustFreeAddr(t),
		PeerAddr: mustFreeAddr(t),
		DataDir:  filepath.Join(dir, "node1"),
		LogPath:  filepath.Join(dir, "node1.log"),
		bin:      bin,
	}
	n.Args = []string{"--node-id", "1", "--data-dir", n.DataDir, "--rest-addr", n.RESTAddr,
		"--peer-addr", n.PeerAddr, "--bootstrap-servers", brokers, "--offset-flush-interval", "500ms"}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n.Kill()
		CheckLogForSecrets(t, n)
		if t.Failed() {
			t.Logf("node log:\n%s", n.LogTail(40))
		}
	})

	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt")
	var lines []string
	appendLines := func(count int) {
		t.Helper()
		f, err := os.OpenFile(in, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var b strings.Builder
		for range count {
			line := fmt.Sprintf("line-%06d-%s", len(lines), strings.Repeat("x", len(lines)%37))
			lines = append(lines, line)
			b.WriteString(line + "\n")
		}
		if _, err := f.WriteString(b.String()); err != nil {
			t.Fatal(err)
		}
	}
	appendLines(20000)

	topic := fmt.Sprintf("kcd-systemtest-file-%d", time.Now().UnixNano())
	create := func(body string) {
		t.Helper()
		for {
			status, err := n.do(ctx, "POST", "/connectors", []byte(body), nil)
			if err == nil && status == 201 {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("create connector: %d %v", status, err)
			}
			time.Sleep(100 * time.Millisecond) // the node may still be starting
		}
	}
	create(fmt.Sprintf(`{"name":"src","config":{"connector.class":"FileStreamSource","file":%q,"topic":%q}}`, in, topic))
	create(fmt.Sprintf(`{"name":"sink","config":{"connector.class":"FileStreamSink","file":%q,"topics":%q}}`, out, topic))

	// Kill -9 once the first batch has gone through and its offsets were
	// committed (two flush intervals), then keep writing.
	if err := WaitFor(ctx, 20*time.Millisecond, func() (bool, error) { return countLines(out) >= 20000, nil }); err != nil {
		t.Fatalf("sink output did not grow: %d lines", countLines(out))
	}
	time.Sleep(time.Second)
	appendLines(5000)
	if err := WaitFor(ctx, 5*time.Millisecond, func() (bool, error) { return countLines(out) >= 21000, nil }); err != nil {
		t.Fatalf("sink output did not grow: %d lines", countLines(out))
	}
	n.Kill()
	t.Logf("killed with %d of %d lines in the output", countLines(out), len(lines))
	appendLines(10000)
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	appendLines(5000)

	if err := WaitFor(ctx, 100*time.Millisecond, func() (bool, error) {
		return firstCopies(out, len(lines)) >= len(lines), nil
	}); err != nil {
		t.Fatalf("after the restart the output has %d of %d lines", firstCopies(out, len(lines)), len(lines))
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	next := 0
	for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		seen[l]++
		if seen[l] > 1 {
			continue
		}
		if next >= len(lines) || l != lines[next] {
			t.Fatalf("first copies out of order at %d: got %q, want %q", next, l, lines[min(next, len(lines)-1)])
		}
		next++
	}
	dups := 0
	for _, c := range seen {
		dups += c - 1
	}
	t.Logf("%d lines, every one delivered in order; %d duplicate lines from the replay after the kill", len(lines), dups)
	// Offsets were committed before the kill: what is replayed, by the
	// source and by the sink, is what followed the last commit (typically
	// the 5,000 lines written just before), not the first 20,000 lines,
	// which a run without commits would send again (over 40,000 copies).
	if dups >= 20000 {
		t.Errorf("%d duplicates: the offsets committed before the kill were not used", dups)
	}
}

func countLines(path string) int {
	b, _ := os.ReadFile(path)
	return bytes.Count(b, []byte{'\n'})
}

// firstCopies counts the distinct lines of the file.
func firstCopies(path string, hint int) int {
	b, _ := os.ReadFile(path)
	seen := make(map[string]struct{}, hint)
	for _, l := range bytes.Split(b, []byte{'\n'}) {
		if len(l) > 0 {
			seen[string(l)] = struct{}{}
		}
	}
	return len(seen)
}
