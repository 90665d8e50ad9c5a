package systemtest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestIntegrationProcessJoinAndRemove: a fourth node started with --join
// joins as a learner, is promoted to voter once it has caught up, serves
// reads and writes; removing it with DELETE /kcd/v1/cluster/members/4
// makes it exit with an error that says so, and it refuses to come back.
func TestIntegrationProcessJoinAndRemove(t *testing.T) {
	bin := binary(t)
	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
	defer cancel()

	c := StartCluster(t, bin, Options{})
	if _, err := WaitLeader(ctx, c.Nodes()...); err != nil {
		t.Fatal(err)
	}
	a := newAcks()
	if err := putRetry(ctx, a, c.Nodes(), "jr/before-join", "1"); err != nil {
		t.Fatal(err)
	}

	joiner := c.NewJoiner(4, c.Node(2).URL())
	if err := joiner.Start(); err != nil {
		t.Fatal(err)
	}
	var info ClusterInfo
	if err := WaitFor(ctx, 50*time.Millisecond, func() (bool, error) {
		var err error
		info, err = c.Node(1).Info(ctx)
		m, ok := info.Member(4)
		return err == nil && ok && m.Raft == "voter", err
	}); err != nil {
		m, _ := info.Member(4)
		t.Fatalf("node 4 was not promoted to voter (member 4 as node 1 sees it: %+v): %v", m, err)
	}
	if !strings.Contains(joiner.RunLog(), "joined the cluster as a learner") {
		t.Errorf("node 4's log does not say it joined as a learner")
	}
	if v, found, err := joiner.Get(ctx, "jr/before-join"); err != nil || !found || v != "1" {
		t.Errorf("node 4 reads jr/before-join as %q (found %v, err %v), want %q", v, found, err, "1")
	}
	if err := putRetry(ctx, a, []*Node{joiner}, "jr/through-4", "2"); err != nil {
		t.Fatal(err)
	}
	if v, found, err := c.Node(1).Get(ctx, "jr/through-4"); err != nil || !found || v != "2" {
		t.Errorf("node 1 reads jr/through-4 as %q (found %v, err %v), want %q", v, found, err, "2")
	}

	// Removal, sent to node 1 (forwarded to the leader if need be).
	if err := c.Node(1).RemoveMember(ctx, 4); err != nil {
		t.Fatalf("DELETE /kcd/v1/cluster/members/4: %v", err)
	}
	if err := WaitFor(ctx, 50*time.Millisecond, func() (bool, error) {
		info, err := c.Node(1).Info(ctx)
		_, listed := info.Member(4)
		return err == nil && !listed, err
	}); err != nil {
		t.Fatalf("member 4 still listed after its removal: %v", err)
	}
	if err := putRetry(ctx, a, c.Nodes()[:3], "jr/after-remove", "3"); err != nil {
		t.Fatalf("the three remaining voters do not take writes: %v", err)
	}

	const exitWithin = 6 * time.Second
	if !joiner.WaitExit(exitWithin) {
		t.Errorf("removed node 4 still runs %v after its removal; it should stop with an error saying it was removed", exitWithin)
		joiner.Kill()
	} else {
		checkFatal(t, joiner, "removed node 4", "removed")
	}

	// A removed id never comes back: restarting the node from its data dir
	// must fail too.
	if err := joiner.Start(); err != nil {
		t.Fatal(err)
	}
	if !joiner.WaitExit(exitWithin) {
		t.Errorf("removed node 4, restarted from its data dir, still runs after %v; it should refuse to start", exitWithin)
		joiner.Kill()
	} else {
		checkFatal(t, joiner, "restarted removed node 4", "removed")
	}
}

// TestIntegrationProcessRefusesForeignDataDir: a data dir stays with the
// node and cluster that created it. Restarting on it with an
// --initial-cluster of another cluster, or with another --node-id, exits
// non-zero at once with a message that says whose data it is; the right
// flags still start the node, with its data intact.
func TestIntegrationProcessRefusesForeignDataDir(t *testing.T) {
	bin := binary(t)
	ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
	defer cancel()

	c := StartCluster(t, bin, Options{Size: 1})
	n := c.Node(1)
	if _, err := WaitLeader(ctx, n); err != nil {
		t.Fatal(err)
	}
	a := newAcks()
	if err := putRetry(ctx, a, []*Node{n}, "refuse/key", "kept"); err != nil {
		t.Fatal(err)
	}
	if err := n.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if code := n.ExitCode(); code != 0 {
		t.Fatalf("node 1 exited with status %d after SIGTERM, want 0", code)
	}
	orig := slices.Clone(n.Args)

	other, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string // in the error line
	}{
		{
			name: "another cluster",
			args: setFlag(orig, "--initial-cluster", c.Initial()+",2="+other),
			want: "belongs to cluster",
		},
		{
			name: "another node id",
			args: setFlag(dropFlag(orig, "--initial-cluster"), "--node-id", "2"),
			want: "belongs to node 1",
		},
		{
			name: "another node id in the same cluster's flags",
			args: setFlag(setFlag(orig, "--initial-cluster", c.Initial()+",2="+other), "--node-id", "2"),
			want: "belongs to node 1",
		},
	} {
		n.Args = tc.args
		if err := n.Start(); err != nil {
			t.Fatal(err)
		}
		if !n.WaitExit(15 * time.Second) {
			t.Errorf("%s: kcd still runs on node 1's data dir with %v", tc.name, tc.args)
			n.Kill()
			continue
		}
		checkFatal(t, n, tc.name, tc.want)
	}

	n.Args = orig
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := WaitLeader(ctx, n); err != nil {
		t.Fatalf("node 1 does not come back with its own flags: %v", err)
	}
	if v, found, err := n.Get(ctx, "refuse/key"); err != nil || !found || v != "kept" {
		t.Errorf("after the refused starts node 1 reads refuse/key as %q (found %v, err %v), want %q", v, found, err, "kept")
	}
}

// checkFatal checks that n's last run exited non-zero and that its final
// "kcd: ..." error line contains want.
func checkFatal(t *testing.T, n *Node, what, want string) {
	t.Helper()
	log := n.RunLog()
	var line string
	for l := range strings.SplitSeq(log, "\n") {
		if strings.HasPrefix(l, "kcd: ") {
			line = l
		}
	}
	if code := n.ExitCode(); code == 0 {
		t.Errorf("%s: exited with status 0, want an error status", what)
	}
	switch {
	case line == "":
		t.Errorf("%s: no \"kcd: <error>\" line in its output:\n%s", what, log)
	case !strings.Contains(line, want):
		t.Errorf("%s: error line %q does not say %q", what, line, want)
	default:
		t.Logf("%s: exit status %d, %s", what, n.ExitCode(), line)
	}
}

// setFlag returns args with flag set to value (appended when absent).
func setFlag(args []string, flag, value string) []string {
	out := slices.Clone(args)
	for i := 0; i+1 < len(out); i++ {
		if out[i] == flag {
			out[i+1] = value
			return out
		}
	}
	return append(out, flag, value)
}

// dropFlag returns args without flag and its value.
func dropFlag(args []string, flag string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == flag {
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}
