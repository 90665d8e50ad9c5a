package systemtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/daemon/javahost"
	"github.com/kcd-project/kcd/internal/testenv"
)

// javaHostArgs returns the flags that give a node the Java connector host
// with the test environment's plugin path (KCD_TEST_PLUGIN_PATH), and the
// host's directory (KCD_TEST_JAVA_HOST_DIR, else javahost/target/javahost
// of this checkout). Without a built host the test is skipped, or failed
// under CI=true.
func javaHostArgs(t *testing.T) []string {
	t.Helper()
	plugins := testenv.PluginPath(t)
	dir := testenv.JavaHostDir(t)
	return []string{"--plugin-path", plugins, "--java-host-dir", dir, "--java-host-heap", "256m"}
}

// createConnector POSTs a connector, retrying while the cluster is still
// forming (no leader, no worker yet: 409, 5xx, no answer).
func createConnector(ctx context.Context, t *testing.T, n *Node, name string, cfg map[string]string) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"name": name, "config": cfg})
	if err != nil {
		t.Fatal(err)
	}
	var status int
	if err := WaitFor(ctx, 200*time.Millisecond, func() (bool, error) {
		var err error
		status, err = n.do(ctx, "POST", "/connectors", body, nil)
		if status/100 == 4 && status != 409 {
			t.Fatalf("create connector %s: %v", name, err) // refused: retrying cannot help
		}
		return err == nil && status == 201, err
	}); err != nil {
		t.Fatalf("create connector %s: %d %v", name, status, err)
	}
}

// statusOf is GET /connectors/{name}/status.
func statusOf(ctx context.Context, n *Node, name string) (api.ConnectorStateInfo, error) {
	var st api.ConnectorStateInfo
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	err := n.GetJSON(rctx, "/connectors/"+name+"/status", &st)
	return st, err
}

// runningOn says whether every one of want tasks is RUNNING, none on a
// worker whose id contains one of avoid; it returns the tasks per worker.
func runningOn(st api.ConnectorStateInfo, want int, avoid ...string) (bool, map[string][]int) {
	by := map[string][]int{}
	ok := len(st.Tasks) == want
	for _, ts := range st.Tasks {
		by[ts.WorkerID] = append(by[ts.WorkerID], ts.ID)
		if ts.State != "RUNNING" {
			ok = false
		}
		for _, a := range avoid {
			if strings.Contains(ts.WorkerID, a) {
				ok = false
			}
		}
	}
	return ok, by
}

// javaHostPid returns the pid of the Java host a kcd process runs (its
// child running kcd-javahost.jar), 0 when there is none.
func javaHostPid(kcdPid int) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so cut at the last ')'.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(kcdPid) {
			continue
		}
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		// A quarantined connector's own host is not the node's host.
		if bytes.Contains(cmd, []byte(javahost.JarName)) && !bytes.Contains(cmd, []byte(ownHostFlag)) {
			return pid
		}
	}
	return 0
}

// pidAlive tells whether a process exists (and is no zombie).
func pidAlive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || !strings.HasPrefix(strings.TrimSpace(string(stat[i+1:])), "Z")
}

func kafkaClient(t *testing.T, brokers string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(strings.Split(brokers, ",")...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// dropTopicsAtEnd deletes topics when the test ends.
func dropTopicsAtEnd(t *testing.T, brokers string, topics ...string) {
	t.Cleanup(func() {
		cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...))
		if err != nil {
			return
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = kadm.NewClient(cl).DeleteTopics(ctx, topics...)
	})
}
