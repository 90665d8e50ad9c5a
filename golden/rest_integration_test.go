package golden

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/daemon/connect"
	_ "github.com/kcd-project/kcd/daemon/connectors/file" // FileStreamSource/Sink, as in the Kafka Connect worker
	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/daemon/herder"
	"github.com/kcd-project/kcd/daemon/javahost"
	"github.com/kcd-project/kcd/daemon/restapi"
	"github.com/kcd-project/kcd/internal/testenv"
	"github.com/kcd-project/kcd/raft/fsm"
)

// TestIntegrationConnectorRESTMatchesKafkaConnect sends the same connector
// requests to kcd and to the real Kafka Connect worker, and compares status
// codes and bodies, after normalizing what must differ (worker ids,
// versions, traces, order, other connectors on the worker). The
// differences kcd keeps on purpose (docs/compatibility.md) are checked
// too, with comparer.differs.
//
// kcd is served here by the REST handler over a local store, with a
// stand-in worker (fakeWorker) that writes task configs and statuses as
// Kafka Connect's worker would: the node does not run the herder yet.
// Once daemon.Node wires restapi.Options.Connect and runs the worker, start
// a node as serverinfo_integration_test.go does and drop fakeWorker.
func TestIntegrationConnectorRESTMatchesKafkaConnect(t *testing.T) {
	connectURL := testenv.Require(t, testenv.ConnectURL)
	brokers := testenv.Require(t, testenv.Kafka)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()

	k := side{"kcd", startKcdConnect(ctx, t)}
	c := side{"Kafka Connect", connectURL}
	p := fmt.Sprintf("kcd-golden-rest-%d-", time.Now().UnixNano())
	t.Cleanup(func() { deleteConnectors(t, c, p, brokers) })
	cmp := comparer{t: t, k: k, c: c, prefix: p}

	dir := t.TempDir()
	file := filepath.Join(dir, "in.txt") // empty: the sources read nothing, so both have no offsets
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	src, sink := p+"src", p+"sink"
	topic := p + "topic"
	createTopic(ctx, t, brokers, topic)
	srcConfig := fmt.Sprintf(`{"connector.class":"FileStreamSource","file":%q,"topic":%q}`, file, topic)
	// A password: both sides echo it in answers, neither may log it
	// (scripts/test.sh looks for kcd-canary-secret- in the tests' output).
	sinkConfig := fmt.Sprintf(`{"connector.class":"FileStreamSinkConnector","file":%q,"topics":%q,"tasks.max":"2","connection.password":"kcd-canary-secret-golden-%d"}`, filepath.Join(dir, "out.txt"), topic, time.Now().UnixNano())

	t.Run("plugins", func(t *testing.T) {
		cmp := cmp.with(t)
		kb, cb := cmp.both(200, "GET", "/connector-plugins", "")
		kp, cp := decode[[]map[string]any](t, "kcd plugins", kb), decode[[]map[string]any](t, "connect plugins", cb)
		for _, want := range cp { // the worker's plugins; kcd may have more
			if !slices.ContainsFunc(kp, func(got map[string]any) bool { return mustJSON(normalize(got)) == mustJSON(normalize(want)) }) {
				t.Errorf("kcd lacks plugin %v: %s", want, kb)
			}
		}
		kb, cb = cmp.both(200, "GET", "/connector-plugins?connectorsOnly=false", "")
		kp, cp = decode[[]map[string]any](t, "kcd plugins", kb), decode[[]map[string]any](t, "connect plugins", cb)
		for _, got := range kp { // every Kafka Connect plugin kcd lists, the worker lists too
			if class, _ := got["class"].(string); strings.HasPrefix(class, "io.kcd.") || strings.HasPrefix(class, "test.kcd.") {
				continue // kcd's own plugins (Datagen) have no counterpart, nor the fakes other tests here register
			}
			if !slices.ContainsFunc(cp, func(want map[string]any) bool { return mustJSON(normalize(got)) == mustJSON(normalize(want)) }) {
				t.Errorf("Kafka Connect has no plugin %v", got)
			}
		}
		cmp.same(200, "GET", "/connector-plugins/FileStreamSource/config", "")
		cmp.same(200, "GET", "/connector-plugins/org.apache.kafka.connect.file.FileStreamSinkConnector/config", "")
		cmp.same(404, "GET", "/connector-plugins/NoSuchPlugin/config", "")
	})

	// What a web page can make a browser send without asking (text/plain,
	// a form, an untyped body) is refused with 415, as on Kafka Connect.
	t.Run("media types", func(t *testing.T) {
		create := fmt.Sprintf(`{"name":%q,"config":%s}`, p+"ct", srcConfig)
		for _, tc := range []struct{ method, path, ct, body string }{
			{"POST", "/connectors", "text/plain", create},
			{"POST", "/connectors", "application/x-www-form-urlencoded", create},
			{"POST", "/connectors", "", create},
			{"PUT", "/connectors/" + p + "ct/config", "text/plain;charset=UTF-8", srcConfig},
			{"PUT", "/connector-plugins/FileStreamSource/config/validate", "application/vnd+json", srcConfig},
			{"PUT", "/connectors/" + p + "nope/pause", "text/plain", ""},
			{"PUT", "/connectors/" + p + "nope/pause", "", ""},
			{"DELETE", "/connectors/" + p + "nope", "text/plain", ""},
		} {
			kr, cr := k.doAs(t, tc.method, tc.path, tc.body, tc.ct), c.doAs(t, tc.method, tc.path, tc.body, tc.ct)
			if kr.status != cr.status || string(kr.body) != string(cr.body) {
				t.Errorf("%s %s (Content-Type %q): kcd %d %s, Kafka Connect %d %s", tc.method, tc.path, tc.ct, kr.status, kr.body, cr.status, cr.body)
			}
		}
		cmp.with(t).same(404, "GET", "/connectors/"+p+"ct", "")
	})

	t.Run("validate", func(t *testing.T) {
		cmp := cmp.with(t)
		for _, body := range []string{
			`{"connector.class":"FileStreamSource"}`,
			`{"connector.class":"FileStreamSink","name":"v","topics":"a","file":"/tmp/x"}`,
			`{"connector.class":"org.apache.kafka.connect.file.FileStreamSinkConnector","name":"v","topics":"a","topics.regex":"b.*","file":"/tmp/x"}`,
			`{"connector.class":"FileStreamSink","name":"v","file":"/tmp/x","topics":"a,dlq","errors.deadletterqueue.topic.name":"dlq","tasks.max":"0"}`,
			`{"connector.class":"FileStreamSink","name":"a\u0001b","file":"/tmp/x","topics.regex":"d.*","errors.deadletterqueue.topic.name":"dlq"}`,
			`{"connector.class":"FileStreamSink","name":"v","file":"/tmp/x","topics":" a , b ","tasks.max":"x","errors.tolerance":"ALL","errors.log.enable":"TRUE","tasks.max.enforce":"maybe","value.converter":"com.example.Nope","config.action.reload":"later"}`,
			`{"connector.class":"FileStreamSink","name":"v","file":"/tmp/x","topics":"a","transforms":"t1,t1","predicates":"p1","header.converter":null,"extra.setting":null}`,
			`{"connector.class":"FileStreamSource","name":"v","file":"/tmp/x","topic":"t","batch.size":"1.5","exactly.once.support":"bogus","transaction.boundary":"x","transaction.boundary.interval.ms":"-5","offsets.storage.topic":"  ","tasks.max":2}`,
		} {
			plugin := "FileStreamSinkConnector"
			if strings.Contains(body, "Source") {
				plugin = "FileStreamSource"
			}
			cmp.same(200, "PUT", "/connector-plugins/"+plugin+"/config/validate", body)
		}
		cmp.same(400, "PUT", "/connector-plugins/FileStreamSink/config/validate", `{"connector.class":"FileStreamSource"}`)
		cmp.differs(400, 500, "PUT", "/connector-plugins/FileStreamSink/config/validate", `{}`)
		cmp.differs(400, 500, "PUT", "/connector-plugins/Nope/config/validate", `{"connector.class":"Nope"}`)
		cmp.differs(400, 500, "PUT", "/connector-plugins/FileStreamSink/config/validate", `not json`)
	})

	t.Run("create", func(t *testing.T) {
		cmp := cmp.with(t)
		cmp.same(201, "POST", "/connectors", fmt.Sprintf(`{"name":" %s ","config":%s}`, src, srcConfig))
		cmp.same(409, "POST", "/connectors", fmt.Sprintf(`{"name":%q,"config":%s}`, src, srcConfig))
		cmp.same(201, "PUT", "/connectors/"+sink+"/config", sinkConfig)
		cmp.same(201, "POST", "/connectors", fmt.Sprintf(`{"name":%q,"config":%s,"initial_state":"paused"}`, p+"paused", srcConfig))
		cmp.same(201, "POST", "/connectors", fmt.Sprintf(`{"name":%q,"config":%s,"initial_state":"STOPPED"}`, p+"stopped", srcConfig))
		for _, body := range []string{
			fmt.Sprintf(`{"name":%q,"config":{"connector.class":"FileStreamSource","file":"/tmp/x"}}`, p+"bad"),
			fmt.Sprintf(`{"name":%q,"config":{"connector.class":"FileStreamSource","file":"/tmp/x","topic":"t","tasks.max":"many"}}`, p+"bad"),
			fmt.Sprintf(`{"name":%q,"config":{"connector.class":"FileStreamSink","file":"/tmp/x"}}`, p+"bad"),
			fmt.Sprintf(`{"name":%q,"config":{"connector.class":"FileStreamSource","file":"/tmp/x","topic":"t","key.converter":"com.example.Nope"}}`, p+"bad"),
			fmt.Sprintf(`{"name":%q,"config":{"name":"other","connector.class":"FileStreamSource","topic":"t"}}`, p+"bad"),
			fmt.Sprintf(`{"name":%q,"config":{}}`, p+"bad"),
			fmt.Sprintf(`{"name":%q,"config":{"connector.class":"NoSuchConnector"}}`, p+"bad"),
			`{"name":"","config":{"connector.class":"FileStreamSource","file":"/tmp/x","topic":"t"}}`,
		} {
			cmp.same(400, "POST", "/connectors", body)
		}
		cmp.same(400, "PUT", "/connectors/"+src+"/config", `{"name":"other","connector.class":"FileStreamSource","topic":"t"}`)
		cmp.same(400, "PUT", "/connectors/"+src+"/config", `{"connector.class":"FileStreamSource","file":"/tmp/x","batch.size":true}`)
		cmp.differs(400, 500, "POST", "/connectors", `{"name":"x",`)
		cmp.differs(400, 500, "POST", "/connectors", fmt.Sprintf(`{"name":%q,"config":%s,"initial_state":"bogus"}`, p+"bad", srcConfig))
		cmp.differs(400, 500, "POST", "/connectors", fmt.Sprintf(`{"name":%q,"config":%s,"extra":1}`, p+"bad", srcConfig))
		cmp.differs(400, 500, "POST", "/connectors", fmt.Sprintf(`{"name":%q}`, p+"bad"))
	})

	t.Run("read", func(t *testing.T) {
		cmp := cmp.with(t)
		cmp.waitState(ctx, src, "RUNNING", 1) // task lists agree once both ran the connectors
		cmp.waitState(ctx, sink, "RUNNING", 2)
		cmp.same(200, "GET", "/connectors", "")
		cmp.same(200, "GET", "/connectors/"+src, "")
		cmp.same(200, "GET", "/connectors/"+src+"/config", "")
		cmp.same(404, "GET", "/connectors/"+p+"nope", "")
		cmp.same(404, "GET", "/connectors/"+p+"nope/config", "")
		cmp.same(404, "GET", "/connectors/"+p+"nope/status", "")
		cmp.same(404, "GET", "/connectors/"+p+"nope/tasks", "")
		cmp.same(404, "GET", "/connectors/"+p+"nope/offsets", "")
	})

	t.Run("update", func(t *testing.T) {
		cmp := cmp.with(t)
		cmp.same(200, "PATCH", "/connectors/"+src+"/config", `{"batch.size":"10","file":null}`)
		cmp.same(200, "PUT", "/connectors/"+src+"/config", srcConfig)
		cmp.same(404, "PATCH", "/connectors/"+p+"nope/config", `{"batch.size":"10"}`)
		cmp.same(400, "PATCH", "/connectors/"+src+"/config", `{"topic":null}`)
		cmp.same(200, "GET", "/connectors/"+src+"/config", "")
	})

	t.Run("status", func(t *testing.T) {
		cmp := cmp.with(t)
		cmp.waitState(ctx, src, "RUNNING", 1)
		cmp.waitState(ctx, sink, "RUNNING", 2)
		cmp.waitState(ctx, p+"paused", "PAUSED", 0)
		cmp.waitState(ctx, p+"stopped", "STOPPED", 0)
		for _, name := range []string{src, sink, p + "paused", p + "stopped"} {
			cmp.same(200, "GET", "/connectors/"+name+"/status", "")
			cmp.eventually(200, "GET", "/connectors/"+name+"/tasks") // regenerated after the config changes
			cmp.same(200, "GET", "/connectors/"+name, "")
		}
		cmp.same(200, "GET", "/connectors/"+sink+"/tasks/1/status", "")
		cmp.same(404, "GET", "/connectors/"+sink+"/tasks/2/status", "")
		cmp.same(404, "GET", "/connectors/"+sink+"/tasks/x/status", "")
		cmp.same(200, "GET", "/connectors?expand=status", "")
		cmp.same(200, "GET", "/connectors?expand=info&expand=status", "")
		cmp.same(200, "GET", "/connectors?expand=nothing", "")
	})

	t.Run("pause-resume-restart", func(t *testing.T) {
		cmp := cmp.with(t)
		cmp.same(202, "PUT", "/connectors/"+src+"/pause", "")
		cmp.waitState(ctx, src, "PAUSED", 1)
		cmp.same(200, "GET", "/connectors/"+src+"/status", "")
		cmp.same(202, "PUT", "/connectors/"+src+"/resume", "")
		cmp.waitState(ctx, src, "RUNNING", 1)
		cmp.same(404, "PUT", "/connectors/"+p+"nope/pause", "")
		cmp.same(404, "PUT", "/connectors/"+p+"nope/resume", "")
		cmp.same(405, "GET", "/connectors/"+src+"/pause", "")

		cmp.same(204, "POST", "/connectors/"+sink+"/restart", "")
		cmp.waitState(ctx, sink, "RUNNING", 2)
		cmp.same(202, "POST", "/connectors/"+sink+"/restart?includeTasks=true&onlyFailed=true", "")
		cmp.waitState(ctx, sink, "RUNNING", 2)
		cmp.same(202, "POST", "/connectors/"+sink+"/restart?includeTasks=true", "")
		cmp.waitState(ctx, sink, "RUNNING", 2)
		cmp.same(204, "POST", "/connectors/"+sink+"/tasks/1/restart", "")
		cmp.same(404, "POST", "/connectors/"+sink+"/tasks/7/restart", "")
		cmp.same(404, "POST", "/connectors/"+p+"nope/tasks/0/restart", "")
		cmp.same(404, "POST", "/connectors/"+p+"nope/restart", "")
		cmp.waitState(ctx, sink, "RUNNING", 2)
	})

	t.Run("offsets", func(t *testing.T) {
		cmp := cmp.with(t)
		offs := fmt.Sprintf(`{"offsets":[{"partition":{"filename":%q},"offset":{"position":5}}]}`, file)
		cmp.same(400, "PATCH", "/connectors/"+src+"/offsets", offs)
		cmp.same(400, "DELETE", "/connectors/"+src+"/offsets", "")
		cmp.same(404, "PATCH", "/connectors/"+p+"nope/offsets", offs)
		cmp.same(204, "PUT", "/connectors/"+src+"/stop", "")
		cmp.same(404, "PUT", "/connectors/"+p+"nope/stop", "")
		cmp.waitState(ctx, src, "STOPPED", 0)
		cmp.same(200, "GET", "/connectors/"+src+"/status", "")
		cmp.same(200, "GET", "/connectors/"+src, "")
		cmp.same(200, "GET", "/connectors/"+src+"/offsets", "")
		cmp.same(400, "PATCH", "/connectors/"+src+"/offsets", `{"offsets":[]}`)
		cmp.message(200, "PATCH", "/connectors/"+src+"/offsets", offs)
		cmp.eventually(200, "GET", "/connectors/"+src+"/offsets")
		cmp.message(200, "DELETE", "/connectors/"+src+"/offsets", "")
		cmp.eventually(200, "GET", "/connectors/"+src+"/offsets")
		cmp.differs(400, 500, "PATCH", "/connectors/"+src+"/offsets", `junk`)

		sinkOffs := fmt.Sprintf(`{"offsets":[{"partition":{"kafka_topic":%q,"kafka_partition":0},"offset":{"kafka_offset":"3"}}]}`, topic)
		cmp.same(204, "PUT", "/connectors/"+sink+"/stop", "")
		cmp.waitState(ctx, sink, "STOPPED", 0)
		cmp.same(200, "GET", "/connectors/"+sink+"/offsets", "")
		cmp.message(200, "PATCH", "/connectors/"+sink+"/offsets", sinkOffs)
		cmp.eventually(200, "GET", "/connectors/"+sink+"/offsets")
		cmp.same(400, "PATCH", "/connectors/"+sink+"/offsets", fmt.Sprintf(`{"offsets":[{"partition":{"kafka_topic":%q},"offset":{"kafka_offset":1}}]}`, topic))
		cmp.same(400, "PATCH", "/connectors/"+sink+"/offsets", fmt.Sprintf(`{"offsets":[{"partition":{"kafka_topic":%q,"kafka_partition":"x"},"offset":{"kafka_offset":1}}]}`, topic))
		cmp.same(400, "PATCH", "/connectors/"+sink+"/offsets", fmt.Sprintf(`{"offsets":[{"partition":{"kafka_topic":%q,"kafka_partition":0},"offset":{"other":1}}]}`, topic))
		cmp.message(200, "DELETE", "/connectors/"+sink+"/offsets", "")
		cmp.eventually(200, "GET", "/connectors/"+sink+"/offsets")
		cmp.same(202, "PUT", "/connectors/"+src+"/resume", "") // resume also restarts a stopped connector
		cmp.waitState(ctx, src, "RUNNING", 1)
	})

	t.Run("delete", func(t *testing.T) {
		cmp := cmp.with(t)
		for _, name := range []string{src, sink, p + "paused", p + "stopped"} {
			cmp.same(204, "DELETE", "/connectors/"+name, "")
			cmp.same(404, "DELETE", "/connectors/"+name, "")
			cmp.same(404, "GET", "/connectors/"+name, "")
		}
		cmp.same(200, "GET", "/connectors", "")
	})
}

// side is one REST API under comparison.
type side struct{ name, base string }

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (s side) do(t *testing.T, method, path, body string) reply {
	t.Helper()
	return s.doAs(t, method, path, body, "application/json")
}

// doAs is do with Content-Type ct, or none when ct is empty.
func (s side) doAs(t *testing.T, method, path, body, ct string) reply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %s %s: %v", s.name, method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{res.StatusCode, res.Header, b}
}

// retriable tells whether Kafka Connect said the request failed for now
// and may be sent again: altering or resetting a sink's offsets right
// after it stopped answers 500 "...its tasks haven't stopped completely
// yet... this operation can be safely retried" while its consumers leave
// the group.
func retriable(r reply) bool {
	var e restapi.ErrorMessage
	return r.status == http.StatusInternalServerError && json.Unmarshal(r.body, &e) == nil &&
		(strings.Contains(e.Message, "can be safely retried") || strings.Contains(e.Message, "rebalance is expected"))
}

// doRetrying is do, sending the request again, with a short backoff,
// while the answer says it can be retried, for up to a minute: a stopped
// sink task that did not stop within Kafka Connect's graceful shutdown
// timeout keeps its consumer in the group until the consumer's session
// times out (session.timeout.ms, 45 s by default).
func (s side) doRetrying(t *testing.T, method, path, body string) reply {
	t.Helper()
	start := time.Now()
	backoff := 100 * time.Millisecond
	for tries := 1; ; tries++ {
		r := s.do(t, method, path, body)
		if !retriable(r) || time.Since(start) > time.Minute {
			if tries > 1 {
				t.Logf("%s: %s %s: %d after %d tries in %v", s.name, method, path, r.status, tries, time.Since(start).Round(time.Millisecond))
			}
			return r
		}
		if tries == 1 {
			t.Logf("%s: %s %s: %d %s; retrying", s.name, method, path, r.status, r.body)
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, time.Second)
	}
}

// comparer sends each request to both sides and compares the answers.
type comparer struct {
	t      *testing.T
	k, c   side
	prefix string // names of this test's connectors: others on the worker are ignored
}

func (m comparer) with(t *testing.T) comparer { m.t = t; return m }

// both sends the request to both sides, checks that each answers status,
// and returns the bodies.
func (m comparer) both(status int, method, path, body string) ([]byte, []byte) {
	m.t.Helper()
	kr, cr := m.k.do(m.t, method, path, body), m.c.doRetrying(m.t, method, path, body)
	if kr.status != status || cr.status != status {
		m.t.Errorf("%s %s %s: kcd %d %s; Kafka Connect %d %s; want %d", method, path, body, kr.status, kr.body, cr.status, cr.body, status)
	}
	if loc, cloc := kr.header.Get("Location"), cr.header.Get("Location"); pathOf(loc) != pathOf(cloc) {
		m.t.Errorf("%s %s: Location kcd %q, Kafka Connect %q", method, path, loc, cloc)
	}
	return kr.body, cr.body
}

// same checks that both sides answer status with the same normalized body.
func (m comparer) same(status int, method, path, body string) {
	m.t.Helper()
	kb, cb := m.both(status, method, path, body)
	kn, cn := m.normalized(kb), m.normalized(cb)
	if kn != cn {
		m.t.Errorf("%s %s %s: bodies differ\n  kcd:           %s\n  Kafka Connect: %s", method, path, body, kn, cn)
	}
}

// eventually is same for a read of what Kafka Connect applies
// asynchronously (offsets are read back from its offsets topic): it asks
// again until the answers agree, for up to 10 s.
func (m comparer) eventually(status int, method, path string) {
	m.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		kr, cr := m.k.do(m.t, method, path, ""), m.c.do(m.t, method, path, "")
		kn, cn := m.normalized(kr.body), m.normalized(cr.body)
		if kr.status == status && cr.status == status && kn == cn {
			return
		}
		if time.Now().After(deadline) {
			m.t.Errorf("%s %s: answers differ\n  kcd:           %d %s\n  Kafka Connect: %d %s", method, path, kr.status, kn, cr.status, cn)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// differs checks a known difference: the same error body shape, different
// statuses (kcd answers a client's mistake with 400 where Kafka Connect's
// Jackson or NullPointerException surfaces as a 500).
func (m comparer) differs(kcdStatus, connectStatus int, method, path, body string) {
	m.t.Helper()
	kr, cr := m.k.do(m.t, method, path, body), m.c.do(m.t, method, path, body)
	var ke, ce restapi.ErrorMessage
	if kr.status != kcdStatus || cr.status != connectStatus || json.Unmarshal(kr.body, &ke) != nil || json.Unmarshal(cr.body, &ce) != nil ||
		ke.ErrorCode != kcdStatus || ce.ErrorCode != connectStatus || ke.Message == "" {
		m.t.Errorf("%s %s %s: kcd %d %s (want %d); Kafka Connect %d %s (want %d)", method, path, body, kr.status, kr.body, kcdStatus, cr.status, cr.body, connectStatus)
	}
}

// message compares the answers of an offsets change: the message says
// whether the connector confirmed the change (connect.OffsetAlterer), as
// both sides' FileStream connectors do.
func (m comparer) message(status int, method, path, body string) {
	m.t.Helper()
	kb, cb := m.both(status, method, path, body)
	km, cm := decode[herder.Message](m.t, "kcd", kb), decode[herder.Message](m.t, "connect", cb)
	if km.Message != cm.Message {
		m.t.Errorf("%s %s: message kcd %q, Kafka Connect %q", method, path, km.Message, cm.Message)
	}
}

// waitState waits until both sides report the connector in state with
// tasks tasks, all in that state.
func (m comparer) waitState(ctx context.Context, name, state string, tasks int) {
	m.t.Helper()
	for _, s := range []side{m.k, m.c} {
		for {
			r := s.do(m.t, "GET", "/connectors/"+name+"/status", "")
			var st struct {
				Connector struct{ State string }
				Tasks     []struct{ State string }
			}
			ok := r.status == 200 && json.Unmarshal(r.body, &st) == nil && st.Connector.State == state && len(st.Tasks) == tasks
			for _, ts := range st.Tasks {
				ok = ok && ts.State == state
			}
			if ok {
				break
			}
			if ctx.Err() != nil {
				m.t.Fatalf("%s: %s is not %s with %d tasks: %d %s", s.name, name, state, tasks, r.status, r.body)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

func pathOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	return p.EscapedPath()
}

// normalized is body as canonical JSON with what may differ replaced:
// worker ids, versions, traces, other tests' connectors, Java's plugin
// descriptions, list order where Kafka Connect's is a HashMap's.
func (m comparer) normalized(body []byte) string {
	var v any
	if len(body) == 0 {
		return ""
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return string(body)
	}
	switch x := v.(type) {
	case []any: // GET /connectors: this test's names, sorted
		if len(x) == 0 || isString(x[0]) {
			var names []string
			for _, n := range x {
				if s, ok := n.(string); ok && strings.HasPrefix(s, m.prefix) {
					names = append(names, s)
				}
			}
			slices.Sort(names)
			return mustJSON(names)
		}
	case map[string]any: // GET /connectors?expand=...: this test's connectors
		if _, isExpand := x["name"]; !isExpand && !isError(x) && !hasKey(x, "offsets") && !hasKey(x, "error_count") && looksLikeExpand(x) {
			for k := range x {
				if !strings.HasPrefix(k, m.prefix) {
					delete(x, k)
				}
			}
		}
	}
	return mustJSON(normalize(v))
}

func taskID(v any) float64 {
	m, _ := v.(map[string]any)
	id, _ := m["id"].(float64)
	return id
}

func isString(v any) bool                    { _, ok := v.(string); return ok }
func hasKey(m map[string]any, k string) bool { _, ok := m[k]; return ok }
func isError(m map[string]any) bool          { return hasKey(m, "error_code") }

// looksLikeExpand tells a GET /connectors?expand=... answer (name to
// {"status","info"}) from a config map (name to string).
func looksLikeExpand(m map[string]any) bool {
	for _, v := range m {
		if _, ok := v.(map[string]any); !ok {
			return false
		}
	}
	return true
}

func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			x[k] = normalize(val)
		}
		if hasKey(x, "worker_id") {
			x["worker_id"] = "<worker>"
			delete(x, "trace")
		}
		if s, ok := x["version"].(string); ok && s != "" {
			x["version"] = "<version>"
		}
		if msg, ok := x["message"].(string); ok {
			// Kafka Connect prefixes the exception class to this message,
			// except the first time a class name is looked up; kcd always does.
			msg = strings.TrimPrefix(msg, "org.apache.kafka.connect.errors.ConnectException: ")
			if i := strings.Index(msg, "available connectors are: "); i >= 0 {
				msg = msg[:i] + "available connectors are: <plugins>"
			}
			x["message"] = msg
		}
		// The tasks of a restart plan come in Kafka Connect in HashMap
		// order; kcd sorts them by id, as in every status.
		if tasks, ok := x["tasks"].([]any); ok && hasKey(x, "connector") {
			slices.SortFunc(tasks, func(a, b any) int { return cmp.Compare(taskID(a), taskID(b)) })
		}
		normalizeSetting(x)
		if offs, ok := x["offsets"].([]any); ok {
			slices.SortFunc(offs, func(a, b any) int { return strings.Compare(mustJSON(a), mustJSON(b)) })
		}
	case []any:
		for i := range x {
			x[i] = normalize(x[i])
		}
	}
	return v
}

// normalizeSetting evens out a setting's definition (ConfigKeyInfo) or a
// validate entry ({"definition","value"}): plugin versions and the
// converters each side has (kcd ships fewer).
func normalizeSetting(x map[string]any) {
	def, _ := x["definition"].(map[string]any)
	val, _ := x["value"].(map[string]any)
	if def == nil && val == nil && hasKey(x, "default_value") {
		def = x
	}
	name := ""
	if def != nil {
		name, _ = def["name"].(string)
	}
	if val != nil {
		errs := asSlice(val["errors"])
		for i, e := range errs {
			if msg, ok := e.(string); ok {
				errs[i] = versionsRE.ReplaceAllString(msg, "available versions: <versions>")
			}
		}
	}
	switch {
	case strings.HasSuffix(name, ".plugin.version"):
		if def["default_value"] != nil {
			def["default_value"] = "<version>"
		}
		if val != nil && val["value"] != nil {
			val["value"] = "<version>"
		}
		if val != nil {
			if rv, _ := val["recommended_values"].([]any); len(rv) > 0 {
				val["recommended_values"] = []any{"<version>"}
			}
		}
	case name == "key.converter" || name == "value.converter" || name == "header.converter" || strings.HasSuffix(name, ".type"):
		if val != nil {
			val["recommended_values"] = "<classes>"
		}
	}
}

var versionsRE = regexp.MustCompile(`available versions: \[[^\]]*\]`)

func asSlice(v any) []any { s, _ := v.([]any); return s }

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// deleteConnectors removes this test's connectors from the worker, and the
// consumer groups of its sinks.
func deleteConnectors(t *testing.T, c side, prefix, brokers string) {
	r := c.do(t, "GET", "/connectors", "")
	var names []string
	_ = json.Unmarshal(r.body, &names)
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			c.do(t, "DELETE", "/connectors/"+n, "")
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers))
	if err != nil {
		return
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for ctx.Err() == nil { // a group is deleted once its members left
		groups, err := adm.ListGroups(ctx)
		if err != nil {
			return
		}
		var ours []string
		for _, g := range groups.Groups() {
			if strings.HasPrefix(g, "connect-"+prefix) {
				ours = append(ours, g)
			}
		}
		if len(ours) == 0 {
			return
		}
		_, _ = adm.DeleteGroups(ctx, ours...)
		time.Sleep(200 * time.Millisecond)
	}
}

func createTopic(ctx context.Context, t *testing.T, brokers, topic string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	t.Cleanup(func() {
		cl, err := kgo.NewClient(kgo.SeedBrokers(brokers))
		if err != nil {
			return
		}
		defer cl.Close()
		_, _ = kadm.NewClient(cl).DeleteTopics(context.Background(), topic)
	})
}

// startKcdConnect serves kcd's REST API over a local store, with the
// stand-in worker, and returns its URL.
func startKcdConnect(ctx context.Context, t *testing.T) string {
	l, err := fsm.OpenLocal(filepath.Join(t.TempDir(), "state.db"), fsm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store := connectstore.New(l)
	quiet := slog.New(slog.DiscardHandler)
	withJavaHost(t, quiet)
	srv := httptest.NewServer(restapi.NewHandler(readyNode{}, restapi.Options{
		Connect: herder.New(store, herder.Options{Logger: quiet}), Store: l, Logger: quiet,
	}))
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		fakeWorker(wctx, store, strings.TrimPrefix(srv.URL, "http://"))
	}()
	t.Cleanup(func() {
		stop()
		<-done
		srv.Close()
		l.Close()
	})
	return srv.URL
}

// withJavaHost gives the in-process kcd a Java connector host on the test
// environment's plugin path, which the real worker has too: both list the
// same plugins.
func withJavaHost(t *testing.T, log *slog.Logger) {
	h := javahost.New(javahost.Options{
		Dir:        testenv.JavaHostDir(t),
		PluginPath: strings.Split(testenv.PluginPath(t), ","),
		Heap:       "256m",
		Logger:     log,
	})
	unregister := connect.RegisterProvider(javahost.NewProvider(h))
	t.Cleanup(func() {
		unregister()
		h.Close()
	})
}

type readyNode struct{}

func (readyNode) KafkaClusterID() (string, bool) { return "golden", true }
func (readyNode) Ready() bool                    { return true }

// fakeWorker stands in for kcd's worker: it writes task configs and
// statuses as Kafka Connect's worker does for the FileStream connectors
// (a source makes one task, a sink tasks.max; each task config is the
// connector's plus task.class), following target states.
func fakeWorker(ctx context.Context, s *connectstore.Store, workerID string) {
	for ctx.Err() == nil {
		names, _ := s.Connectors(ctx)
		for _, name := range names {
			_ = fakeWorkOne(ctx, s, workerID, name)
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func fakeWorkOne(ctx context.Context, s *connectstore.Store, workerID, name string) error {
	cfg, _, err := s.Config(ctx, name)
	if err != nil {
		return err
	}
	target, err := s.Target(ctx, name)
	if err != nil {
		return err
	}
	tasks, err := s.Tasks(ctx, name)
	if err != nil {
		return err
	}
	switch want := fakeTaskConfigs(cfg); {
	case target == connectstore.TargetStopped && len(tasks.Tasks) > 0:
		tasks, err = s.SetTasks(ctx, name, []map[string]string{}, nil)
	case target == connectstore.TargetStarted && !slices.EqualFunc(tasks.Tasks, want, maps.Equal):
		tasks, err = s.SetTasks(ctx, name, want, nil)
	}
	if err != nil {
		return err
	}
	state := map[string]string{connectstore.TargetStarted: "RUNNING", connectstore.TargetPaused: "PAUSED", connectstore.TargetStopped: "STOPPED"}[target]
	have, err := s.Statuses(ctx, name)
	if err != nil {
		return err
	}
	st := connectstore.Status{State: state, WorkerID: workerID, Generation: tasks.Generation}
	if have.Connector == nil || *have.Connector != st {
		if err := s.PutConnectorStatus(ctx, name, st, nil); err != nil {
			return err
		}
	}
	for id := range tasks.Tasks {
		if old, ok := have.Tasks[id]; !ok || old != st {
			if err := s.PutTaskStatus(ctx, name, id, st, nil); err != nil {
				return err
			}
		}
	}
	if len(have.Tasks) > len(tasks.Tasks) {
		return s.DeleteTaskStatuses(ctx, name, len(tasks.Tasks))
	}
	return nil
}

// fakeTaskConfigs is what Kafka Connect's FileStream connectors make: one
// task for a source, tasks.max for a sink, each the connector's config
// plus task.class.
func fakeTaskConfigs(cfg map[string]string) []map[string]string {
	p, ok := connect.Lookup(cfg["connector.class"])
	if !ok {
		return nil
	}
	n, taskClass := 1, "org.apache.kafka.connect.file.FileStreamSourceTask"
	if p.Type == connect.PluginSink {
		if _, err := fmt.Sscan(cfg["tasks.max"], &n); err != nil {
			n = 1
		}
		taskClass = "org.apache.kafka.connect.file.FileStreamSinkTask"
	}
	out := make([]map[string]string, n)
	for i := range out {
		out[i] = maps.Clone(cfg)
		out[i]["task.class"] = taskClass
	}
	return out
}
