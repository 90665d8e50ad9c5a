package systemtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/internal/testenv"
)

// buildKcctl compiles ./cmd/kcctl of this module into dir, as Build does
// for kcd.
func buildKcctl(t *testing.T, dir string) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err := ModuleRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "kcctl")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/kcctl")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/kcctl: %v\n%s", err, out)
	}
	return bin
}

// tmuxSession runs one command in a detached tmux session on a private
// server, which the test kills when it ends.
type tmuxSession struct {
	t      *testing.T
	socket string
	env    []string
}

func startTmux(t *testing.T, env []string, width, height int, command string) *tmuxSession {
	t.Helper()
	testenv.RequireTool(t, "tmux")
	s := &tmuxSession{t: t, socket: fmt.Sprintf("kcd-top-%x", rand.Uint64()), env: env}
	if err := s.tmux("new-session", "-d", "-s", "top", "-x", fmt.Sprint(width), "-y", fmt.Sprint(height), command); err != nil {
		t.Fatal(err)
	}
	sock, _ := s.run("display-message", "-p", "#{socket_path}")
	t.Cleanup(func() {
		_ = s.tmux("kill-server")
		if sock = strings.TrimSpace(sock); strings.HasSuffix(sock, s.socket) {
			os.Remove(sock) // tmux leaves its socket file behind
		}
	})
	return s
}

func (s *tmuxSession) tmux(args ...string) error {
	_, err := s.run(args...)
	return err
}

func (s *tmuxSession) run(args ...string) (string, error) {
	cmd := exec.Command("tmux", append([]string{"-L", s.socket}, args...)...)
	cmd.Env = append(os.Environ(), s.env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("tmux %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// screen is what the pane shows now ("" when it cannot be read).
func (s *tmuxSession) screen() string {
	out, err := s.run("capture-pane", "-p", "-t", "top")
	if err != nil {
		return ""
	}
	return out
}

// The strings the dashboard agrees to show (tui/top's contract): the Raft
// leader's id right after the word "leader" in the header, and each
// worker's id (its REST host:port) on a line with the count of tasks it
// runs.

// showsLeader: a line says "leader" followed closely by id.
func showsLeader(screen string, id uint64) bool {
	re := regexp.MustCompile(fmt.Sprintf(`(?i)leader[^\w\n]{0,4}(node\s*|n)?%d\b`, id))
	return re.MatchString(screen)
}

// showsTasks: for every worker with tasks in want (worker id → count), a
// line holds both the id and the count as a word of its own.
func showsTasks(screen string, want map[string]int) bool {
	lines := strings.Split(screen, "\n")
	for id, n := range want {
		count := regexp.MustCompile(fmt.Sprintf(`(^|[^\w.:])%d($|[^\w.:])`, n))
		found := false
		for _, l := range lines {
			if i := strings.Index(l, id); i >= 0 && count.MatchString(strings.Replace(l, id, " ", 1)) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func perWorker(p Placement) map[string]int {
	out := map[string]int{}
	for _, n := range p.Where {
		out[n.RESTAddr]++
	}
	return out
}

// TestIntegrationTopLeaderKill: `kcctl top` runs in tmux against a real
// three-node raft+worker cluster whose connector runs 12 tasks, talking to
// the Raft leader. The leader is killed with SIGKILL; within 5 s the screen
// shows the new leader and the tasks running where they moved, although
// the server top talked to is gone (it moves to another member).
func TestIntegrationTopLeaderKill(t *testing.T) {
	bin := binary(t)
	brokers := testenv.Require(t, testenv.Kafka)
	kcctl := buildKcctl(t, t.TempDir())
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c := StartCluster(t, bin, Options{Bootstrap: brokers, ExtraArgs: []string{"--session-timeout", "2s"}})
	lead, err := WaitLeader(ctx, c.Nodes()...)
	if err != nil {
		t.Fatal(err)
	}
	leader := c.Node(lead)
	if err := WaitFor(ctx, 100*time.Millisecond, func() (bool, error) {
		n, err := AliveWorkers(ctx, leader)
		return err == nil && n == 3, nil
	}); err != nil {
		t.Fatalf("three workers did not register: %v", err)
	}
	const tasks = 12
	topic := fmt.Sprintf("kcd-systemtest-top-%d", time.Now().UnixNano())
	body := fmt.Sprintf(`{"name":"gen","config":{"connector.class":"Datagen","topic":%q,"tasks.max":"%d","rate.per.task":"20"}}`, topic, tasks)
	if _, err := leader.do(ctx, "POST", "/connectors", []byte(body), nil); err != nil {
		t.Fatal(err)
	}
	before, err := WaitPlacement(ctx, leader, c.Nodes(), tasks, func(p Placement) bool { return p.Balanced && p.Count(leader) > 0 })
	if err != nil {
		t.Fatalf("the tasks did not settle with some on the leader: %v", err)
	}

	home := t.TempDir() // no user config
	tm := startTmux(t, []string{"HOME=" + home, "NO_COLOR=1"}, 160, 48, kcctl+" top --server "+leader.URL())
	var scr string
	sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
	defer scancel()
	if err := WaitFor(sctx, 50*time.Millisecond, func() (bool, error) {
		scr = tm.screen()
		return showsLeader(scr, lead) && showsTasks(scr, perWorker(before)), nil
	}); err != nil {
		t.Fatalf("the screen never showed leader %d and tasks %v:\n%s", lead, perWorker(before), scr)
	}

	killedAt := time.Now()
	leader.Kill()
	survivors := c.Except(lead)
	var (
		settled  time.Duration // when the cluster itself had a new leader and every task running
		newLead  uint64
		after    Placement
		onScreen time.Duration
		leaderAt time.Duration // when a survivor first showed as leader on screen
	)
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	err = WaitFor(wctx, 50*time.Millisecond, func() (bool, error) {
		scr = tm.screen()
		if leaderAt == 0 {
			for _, n := range survivors {
				if showsLeader(scr, n.ID) {
					leaderAt = time.Since(killedAt)
				}
			}
		}
		if settled == 0 {
			rctx, rcancel := context.WithTimeout(wctx, time.Second)
			defer rcancel()
			info, err := survivors[0].Info(rctx)
			if err != nil || info.Leader == 0 || info.Leader == lead {
				return false, nil
			}
			p, ok := ReadPlacement(rctx, survivors[0], survivors, tasks)
			if !ok {
				return false, nil
			}
			settled, newLead, after = time.Since(killedAt), info.Leader, p
		}
		if showsLeader(scr, newLead) && showsTasks(scr, perWorker(after)) {
			onScreen = time.Since(killedAt)
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("30 s after killing leader %d the screen does not show the new leader %d and tasks %v (cluster settled after %v):\n%s",
			lead, newLead, perWorker(after), settled, scr)
	}
	t.Logf("killed leader %d (%d of %d tasks on it): the new leader %d on screen after %v; the cluster settled (every task RUNNING on a survivor, read through the REST API) after %v; the screen showed leader and tasks after %v",
		lead, before.Count(leader), tasks, newLead, leaderAt.Round(time.Millisecond), settled.Round(time.Millisecond), onScreen.Round(time.Millisecond))
	if testing.Verbose() {
		t.Logf("the screen then:\n%s", scr)
	}
	if onScreen > 5*time.Second {
		t.Errorf("the new leader and the moved tasks appeared on screen %v after the kill, more than 5 s", onScreen.Round(time.Millisecond))
	}
}
