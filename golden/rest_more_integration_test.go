package golden

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/daemon"
	"github.com/kcd-project/kcd/daemon/config"
	"github.com/kcd-project/kcd/daemon/restapi"
	"github.com/kcd-project/kcd/internal/testenv"
)

// TestIntegrationRESTDetailsMatchKafkaConnect compares, with a kcd node
// that runs its own worker (not a stand-in), what
// TestIntegrationConnectorRESTMatchesKafkaConnect leaves out: topic
// tracking, trailing slashes, Accept, task.class in task configs, null
// config values, the connector's own checks of an offsets change, the
// converters and their settings.
func TestIntegrationRESTDetailsMatchKafkaConnect(t *testing.T) {
	connectURL := testenv.Require(t, testenv.ConnectURL)
	brokers := testenv.Require(t, testenv.Kafka)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()

	k := side{"kcd", startKcdNode(t, brokers)}
	c := side{"Kafka Connect", connectURL}
	p := fmt.Sprintf("kcd-golden-more-%d-", time.Now().UnixNano())
	t.Cleanup(func() { deleteConnectors(t, c, p, brokers) })
	cmp := comparer{t: t, k: k, c: c, prefix: p}

	dir := t.TempDir()
	file := filepath.Join(dir, "in.txt")
	if err := os.WriteFile(file, []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	topic := p + "topic"
	createTopic(ctx, t, brokers, topic)
	src, sink := p+"src", p+"sink"
	srcConfig := fmt.Sprintf(`{"connector.class":"FileStreamSource","file":%q,"topic":%q}`, file, topic)
	sinkConfig := fmt.Sprintf(`{"connector.class":"org.apache.kafka.connect.file.FileStreamSinkConnector","file":%q,"topics":%q,"tasks.max":"2"}`, filepath.Join(dir, "out.txt"), topic)

	t.Run("create", func(t *testing.T) {
		cmp := cmp.with(t)
		cmp.same(201, "POST", "/connectors", fmt.Sprintf(`{"name":%q,"config":%s}`, src, srcConfig))
		cmp.same(201, "PUT", "/connectors/"+sink+"/config", sinkConfig)
		cmp.waitState(ctx, src, "RUNNING", 1)
		cmp.waitState(ctx, sink, "RUNNING", 2)
	})

	// Task configs carry task.class (and a sink's the topics), as Kafka
	// Connect's do.
	t.Run("tasks", func(t *testing.T) {
		cmp := cmp.with(t)
		cmp.eventually(200, "GET", "/connectors/"+src+"/tasks")
		cmp.eventually(200, "GET", "/connectors/"+sink+"/tasks")
	})

	// The topics a connector's tasks used: recorded when used, forgotten by
	// a reset, recorded again on the next use; none for a connector that
	// does not exist, whose reset is accepted too.
	t.Run("topics", func(t *testing.T) {
		cmp := cmp.with(t)
		want := fmt.Sprintf(`{%q:{"topics":[%q]}}`, src, topic)
		cmp.waitBody("GET", "/connectors/"+src+"/topics", want)
		cmp.waitBody("GET", "/connectors/"+sink+"/topics", fmt.Sprintf(`{%q:{"topics":[%q]}}`, sink, topic))
		cmp.same(200, "GET", "/connectors/"+src+"/topics", "")
		cmp.same(200, "GET", "/connectors/"+src+"/topics/", "")
		cmp.same(202, "PUT", "/connectors/"+src+"/topics/reset", "")
		cmp.waitBody("GET", "/connectors/"+src+"/topics", fmt.Sprintf(`{%q:{"topics":[]}}`, src))
		f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.WriteString("three\n")
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		cmp.waitBody("GET", "/connectors/"+src+"/topics", want)
		cmp.same(200, "GET", "/connectors/"+p+"nope/topics", "")
		cmp.same(202, "PUT", "/connectors/"+p+"nope/topics/reset", "")
		cmp.same(405, "POST", "/connectors/"+src+"/topics/reset", "")
	})

	// A trailing slash names the same resource.
	t.Run("trailing slashes", func(t *testing.T) {
		cmp := cmp.with(t)
		cmp.same(200, "GET", "/connectors/", "")
		cmp.same(200, "GET", "/connectors/?expand=status", "")
		cmp.same(200, "GET", "/connectors/"+src+"/", "")
		cmp.same(200, "GET", "/connectors/"+src+"/config/", "")
		cmp.same(200, "GET", "/connectors/"+src+"/status/", "")
		cmp.same(200, "GET", "/connectors/"+src+"/tasks/", "")
		cmp.same(200, "GET", "/connectors/"+src+"/tasks/0/status/", "")
		cmp.same(404, "GET", "/connectors/"+p+"nope/", "")
		cmp.same(404, "GET", "/connectors/"+p+"nope/tasks/0/status/", "")
		cmp.same(404, "PUT", "/connectors/"+p+"nope/pause/", "")
		cmp.same(200, "GET", "/connector-plugins/FileStreamSource/config/", "")
		cmp.same(200, "GET", "/health/", "")
		cmp.both(200, "GET", "/connector-plugins/", "")
	})

	// An Accept that admits no JSON is 406; unknown paths stay 404, a
	// write's wrong Content-Type is 415 first.
	t.Run("accept", func(t *testing.T) {
		for _, tc := range []struct{ method, path, accept, ct, body string }{
			{"GET", "/connectors", "text/plain", "", ""},
			{"GET", "/connectors/", "text/plain", "", ""},
			{"GET", "/connectors/" + src, "application/xml", "", ""},
			{"GET", "/connectors/" + p + "nope", "text/*", "", ""},
			{"GET", "/connectors/" + src + "/status", "text/html;q=0.9,*/*;q=0.1", "", ""},
			{"GET", "/connectors/" + src + "/config", "application/*", "", ""},
			{"GET", "/connectors/" + src + "/config", "text/plain, application/json", "", ""},
			{"GET", "/connector-plugins/FileStreamSource/config", "application/vnd.foo+json", "", ""},
			{"PUT", "/connectors/" + p + "nope/pause", "text/plain", "", ""},
			{"GET", "/no-such-path", "text/plain", "", ""},
			{"DELETE", "/health", "text/plain", "", ""},
			{"POST", "/connectors", "text/plain", "text/plain", `{}`},
		} {
			hdr := map[string]string{"Accept": tc.accept}
			if tc.ct != "" {
				hdr["Content-Type"] = tc.ct
			}
			kr, cr := doHeaders(t, k, tc.method, tc.path, tc.body, hdr), doHeaders(t, c, tc.method, tc.path, tc.body, hdr)
			if kr.status != cr.status || cmp.normalized(kr.body) != cmp.normalized(cr.body) {
				t.Errorf("%s %s (Accept %q): kcd %d %s, Kafka Connect %d %s", tc.method, tc.path, tc.accept, kr.status, kr.body, cr.status, cr.body)
			}
		}
	})

	// A null value of a connector's own setting is kept; of a worker
	// setting it is refused.
	t.Run("null values", func(t *testing.T) {
		cmp := cmp.with(t)
		nul := p + "null"
		cmp.same(201, "POST", "/connectors", fmt.Sprintf(`{"name":%q,"config":{"connector.class":"FileStreamSource","file":null,"topic":%q},"initial_state":"STOPPED"}`, nul, topic))
		cmp.same(200, "GET", "/connectors/"+nul+"/config", "")
		cmp.same(200, "PUT", "/connectors/"+nul+"/config", fmt.Sprintf(`{"connector.class":"FileStreamSource","file":null,"topic":%q,"batch.size":null}`, topic))
		cmp.same(200, "GET", "/connectors/"+nul, "")
		cmp.same(400, "PUT", "/connectors/"+nul+"/config", fmt.Sprintf(`{"connector.class":"FileStreamSource","topic":%q,"header.converter":null}`, topic))
		cmp.sameDiff(200, "PUT", "/connector-plugins/FileStreamSource/config/validate", fmt.Sprintf(`{"connector.class":"FileStreamSource","file":null,"topic":%q,"batch.size":null}`, topic))
		// A known difference (docs/compatibility.md): Kafka Connect stores
		// another name in the connector's config; kcd refuses it, as both
		// refuse it in a PUT.
		kr, cr := k.do(t, "PATCH", "/connectors/"+nul+"/config", `{"name":"other"}`), c.do(t, "PATCH", "/connectors/"+nul+"/config", `{"name":"other"}`)
		if want := fmt.Sprintf(`{"error_code":400,"message":"Connector name configuration (other) doesn't match connector name in the URL (%s)"}`, nul); kr.status != 400 || string(kr.body) != want || cr.status != 200 {
			t.Errorf("PATCH a name: kcd %d %s (want 400 %s), Kafka Connect %d %s (want 200)", kr.status, kr.body, want, cr.status, cr.body)
		}
		cmp.same(204, "DELETE", "/connectors/"+nul, "")
	})

	// Altering offsets runs the connector's own checks: kcd refuses with
	// Kafka Connect's messages, as the client's mistake (400) where Kafka
	// Connect answers 500 (docs/compatibility.md); FileStream confirms a
	// change, so the messages are the short ones.
	t.Run("offsets", func(t *testing.T) {
		cmp := cmp.with(t)
		cmp.same(204, "PUT", "/connectors/"+src+"/stop", "")
		cmp.waitState(ctx, src, "STOPPED", 0)
		for _, offs := range []string{
			fmt.Sprintf(`{"offsets":[{"partition":{"filename":%q},"offset":{"position":"seven"}}]}`, file),
			fmt.Sprintf(`{"offsets":[{"partition":{"filename":%q},"offset":{"position":"5"}}]}`, file),
			fmt.Sprintf(`{"offsets":[{"partition":{"filename":%q},"offset":{"position":5.5}}]}`, file),
			fmt.Sprintf(`{"offsets":[{"partition":{"filename":%q},"offset":{"position":-1}}]}`, file),
			fmt.Sprintf(`{"offsets":[{"partition":{"filename":%q},"offset":{}}]}`, file),
			fmt.Sprintf(`{"offsets":[{"partition":{"file":%q},"offset":{"position":5}}]}`, file),
		} {
			cmp.refused(400, 500, "PATCH", "/connectors/"+src+"/offsets", offs)
		}
		cmp.same(200, "PATCH", "/connectors/"+src+"/offsets", fmt.Sprintf(`{"offsets":[{"partition":{"filename":%q},"offset":{"position":5}}]}`, file))
		cmp.eventually(200, "GET", "/connectors/"+src+"/offsets")
		cmp.same(200, "PATCH", "/connectors/"+src+"/offsets", fmt.Sprintf(`{"offsets":[{"partition":{"filename":%q},"offset":null}]}`, file))
		cmp.same(200, "DELETE", "/connectors/"+src+"/offsets", "")

		cmp.same(204, "PUT", "/connectors/"+sink+"/stop", "")
		cmp.waitState(ctx, sink, "STOPPED", 0)
		cmp.same(200, "PATCH", "/connectors/"+sink+"/offsets", fmt.Sprintf(`{"offsets":[{"partition":{"kafka_topic":%q,"kafka_partition":0},"offset":{"kafka_offset":1}}]}`, topic))
		cmp.same(200, "DELETE", "/connectors/"+sink+"/offsets", "")
	})

	// The converters kcd ships are listed as Kafka Connect lists them, as
	// converters and header converters, and describe the same settings.
	t.Run("converters", func(t *testing.T) {
		cmp := cmp.with(t)
		kb, cb := cmp.both(200, "GET", "/connector-plugins?connectorsOnly=false", "")
		kp, cp := decode[[]map[string]any](t, "kcd plugins", kb), decode[[]map[string]any](t, "connect plugins", cb)
		var classes []string
		for _, want := range cp {
			class, _ := want["class"].(string)
			if typ := want["type"]; !strings.HasPrefix(class, "org.apache.kafka.connect.") || (typ != "converter" && typ != "header_converter") {
				continue
			}
			if !slices.ContainsFunc(kp, func(got map[string]any) bool { return mustJSON(normalize(got)) == mustJSON(normalize(want)) }) {
				t.Errorf("kcd lacks %v", want)
			}
			if !slices.Contains(classes, class) {
				classes = append(classes, class)
			}
		}
		if len(classes) < 10 {
			t.Fatalf("Kafka Connect lists only %v", classes)
		}
		for _, class := range classes {
			cmp.same(200, "GET", "/connector-plugins/"+class+"/config", "")
		}
		cmp.same(200, "GET", "/connector-plugins/JsonConverter/config", "")
		cmp.same(200, "GET", "/connector-plugins/Integer/config", "")
		for _, body := range []string{
			fmt.Sprintf(`{"connector.class":"FileStreamSource","topic":%q,"value.converter":"org.apache.kafka.connect.json.JsonConverter","value.converter.decimal.format":"bogus","value.converter.schemas.enable":"maybe"}`, topic),
			fmt.Sprintf(`{"connector.class":"FileStreamSource","topic":%q,"key.converter":"org.apache.kafka.connect.converters.LongConverter","header.converter":"org.apache.kafka.connect.converters.IntegerConverter"}`, topic),
			fmt.Sprintf(`{"connector.class":"FileStreamSource","topic":%q,"value.converter":"StringConverter","value.converter.converter.encoding":"UTF-16"}`, topic),
		} {
			cmp.sameDiff(200, "PUT", "/connector-plugins/FileStreamSource/config/validate", body)
		}
	})

	t.Run("delete", func(t *testing.T) {
		cmp := cmp.with(t)
		for _, name := range []string{src, sink} {
			cmp.same(204, "DELETE", "/connectors/"+name, "")
			cmp.waitBody("GET", "/connectors/"+name+"/topics", fmt.Sprintf(`{%q:{"topics":[]}}`, name))
		}
	})
}

// startKcdNode starts a kcd node (Raft member and worker) on brokers and
// returns its REST URL once it is healthy.
func startKcdNode(t *testing.T, brokers string) string {
	t.Helper()
	return startKcdNodeWith(t, brokers, nil)
}

// startKcdNodeWith is startKcdNode with mod applied to the node's config.
func startKcdNodeWith(t *testing.T, brokers string, mod func(*config.Config)) string {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.RESTAddr = "127.0.0.1:0"
	cfg.BootstrapServers = []string{brokers}
	cfg.PeerAddr = "127.0.0.1:0"
	cfg.OffsetFlushInterval = time.Second
	if mod != nil {
		mod(&cfg)
	}
	node := daemon.New(cfg, slog.New(slog.DiscardHandler))
	if err := node.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	url := node.RESTURL()
	waitUntil(t, time.Minute, 50*time.Millisecond, "kcd healthy on "+brokers, func() (bool, string) {
		status, body := call(t, "GET", url+"/health", nil)
		return status == 200, fmt.Sprintf("%d %s", status, body)
	})
	return url
}

// doHeaders is do with the given request headers.
func doHeaders(t *testing.T, s side, method, path, body string, hdr map[string]string) reply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
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

// waitBody waits until both sides answer GET path with 200 and want
// (compared normalized), for up to 30 s: topic tracking records a topic
// once a task used it.
func (m comparer) waitBody(method, path, want string) {
	m.t.Helper()
	w := m.normalized([]byte(want))
	for _, s := range []side{m.k, m.c} {
		waitUntil(m.t, 30*time.Second, 100*time.Millisecond, fmt.Sprintf("%s: %s %s to answer %s", s.name, method, path, want), func() (bool, string) {
			r := s.do(m.t, method, path, "")
			return r.status == 200 && m.normalized(r.body) == w, fmt.Sprintf("%d %s", r.status, r.body)
		})
	}
}

// refused checks a known difference in status only: both sides refuse
// with the same message, kcd as the client's mistake.
func (m comparer) refused(kcdStatus, connectStatus int, method, path, body string) {
	m.t.Helper()
	kr, cr := m.k.do(m.t, method, path, body), m.c.do(m.t, method, path, body)
	var ke, ce restapi.ErrorMessage
	if kr.status != kcdStatus || cr.status != connectStatus || json.Unmarshal(kr.body, &ke) != nil || json.Unmarshal(cr.body, &ce) != nil ||
		ke.ErrorCode != kcdStatus || ce.ErrorCode != connectStatus || ke.Message != ce.Message {
		m.t.Errorf("%s %s %s: kcd %d %s (want %d); Kafka Connect %d %s (want %d)", method, path, body, kr.status, kr.body, kcdStatus, cr.status, cr.body, connectStatus)
	}
}

// sameDiff is same, reporting only where the bodies differ: validate
// answers are long.
func (m comparer) sameDiff(status int, method, path, body string) {
	m.t.Helper()
	kb, cb := m.both(status, method, path, body)
	kn, cn := m.normalized(kb), m.normalized(cb)
	if kn == cn {
		return
	}
	var kv, cv any
	_ = json.Unmarshal([]byte(kn), &kv)
	_ = json.Unmarshal([]byte(cn), &cv)
	var diffs []string
	jsonDiff("", kv, cv, &diffs)
	if len(diffs) == 0 {
		diffs = append(diffs, "order: "+kn, "order: "+cn)
	}
	m.t.Errorf("%s %s %s: bodies differ (kcd, then Kafka Connect):\n  %s", method, path, body, strings.Join(diffs, "\n  "))
}

// jsonDiff appends where a and b differ, by path; list entries with a
// "name" (settings, validate entries) are matched by it.
func jsonDiff(path string, a, b any, out *[]string) {
	if len(*out) > 40 {
		return
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			break
		}
		for k := range x {
			if _, ok := y[k]; !ok {
				*out = append(*out, fmt.Sprintf("%s.%s: %s, missing", path, k, mustJSON(x[k])))
			} else {
				jsonDiff(path+"."+k, x[k], y[k], out)
			}
		}
		for k := range y {
			if _, ok := x[k]; !ok {
				*out = append(*out, fmt.Sprintf("%s.%s: missing, %s", path, k, mustJSON(y[k])))
			}
		}
		return
	case []any:
		y, ok := b.([]any)
		if !ok {
			break
		}
		name := func(v any) string {
			m, _ := v.(map[string]any)
			if d, ok := m["definition"].(map[string]any); ok {
				m = d
			}
			s, _ := m["name"].(string)
			return s
		}
		if len(x) > 0 && name(x[0]) != "" {
			byName := map[string]any{}
			for _, v := range y {
				byName[name(v)] = v
			}
			for _, v := range x {
				if w, ok := byName[name(v)]; ok {
					jsonDiff(path+"["+name(v)+"]", v, w, out)
					delete(byName, name(v))
				} else {
					*out = append(*out, fmt.Sprintf("%s[%s]: %s, missing", path, name(v), mustJSON(v)))
				}
			}
			for n, w := range byName {
				*out = append(*out, fmt.Sprintf("%s[%s]: missing, %s", path, n, mustJSON(w)))
			}
			return
		}
	}
	if mustJSON(a) != mustJSON(b) {
		*out = append(*out, fmt.Sprintf("%s: %s, %s", path, mustJSON(a), mustJSON(b)))
	}
}

// TestIntegrationJavaOffsetChecksMatchKafkaConnect: a Java plugin run by
// the connector host checks an offsets change with its own alterOffsets,
// as on Kafka Connect: Kafka Connect's FileStreamSourceConnector (asked
// for with kcd.runtime=java) refuses what Kafka Connect's worker refuses,
// and confirms what it accepts.
// TestIntegrationHostPluginSettingsMatchKafkaConnect: the converters,
// transformations and predicates only the Java host has (Debezium's)
// describe their settings at GET /connector-plugins/{plugin}/config as on
// the real worker, which has the same plugin path.
func TestIntegrationHostPluginSettingsMatchKafkaConnect(t *testing.T) {
	connectURL := testenv.Require(t, testenv.ConnectURL)
	brokers := testenv.Require(t, testenv.Kafka)
	plugins, hostDir := testenv.PluginPath(t), testenv.JavaHostDir(t)
	k := side{"kcd", startKcdNodeWith(t, brokers, func(c *config.Config) {
		c.PluginPath, c.JavaHostDir, c.JavaHostHeap = strings.Split(plugins, ","), hostDir, "256m"
	})}
	cmp := comparer{t: t, k: k, c: side{"Kafka Connect", connectURL}, prefix: "kcd-golden-hostplugins-"}
	_, cb := cmp.both(200, "GET", "/connector-plugins?connectorsOnly=false", "")
	n := 0
	for _, want := range decode[[]map[string]any](t, "connect plugins", cb) {
		class, _ := want["class"].(string)
		typ, _ := want["type"].(string)
		if strings.HasPrefix(class, "org.apache.kafka.connect.") || typ == "source" || typ == "sink" {
			continue
		}
		cmp.same(200, "GET", "/connector-plugins/"+class+"/config", "")
		n++
	}
	if n == 0 {
		t.Fatal("the real worker lists no converter, transformation or predicate outside Kafka Connect's own")
	}
}

func TestIntegrationJavaOffsetChecksMatchKafkaConnect(t *testing.T) {
	connectURL := testenv.Require(t, testenv.ConnectURL)
	brokers := testenv.Require(t, testenv.Kafka)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	k := side{"kcd", startKcdConnect(ctx, t)}
	c := side{"Kafka Connect", connectURL}
	p := fmt.Sprintf("kcd-golden-javaoffs-%d-", time.Now().UnixNano())
	t.Cleanup(func() { deleteConnectors(t, c, p, brokers) })
	cmp := comparer{t: t, k: k, c: c, prefix: p}

	file := filepath.Join(t.TempDir(), "in.txt")
	src := p + "src"
	cmp.same(201, "POST", "/connectors", fmt.Sprintf(`{"name":%q,"config":{"connector.class":"FileStreamSource","kcd.runtime":"java","file":%q,"topic":%q},"initial_state":"STOPPED"}`, src, file, p+"topic"))
	cmp.waitState(ctx, src, "STOPPED", 0)
	for _, offs := range []string{
		fmt.Sprintf(`{"offsets":[{"partition":{"filename":%q},"offset":{"position":"seven"}}]}`, file),
		fmt.Sprintf(`{"offsets":[{"partition":{"filename":%q},"offset":{"position":-1}}]}`, file),
		fmt.Sprintf(`{"offsets":[{"partition":{"file":%q},"offset":{"position":5}}]}`, file),
	} {
		cmp.refused(400, 500, "PATCH", "/connectors/"+src+"/offsets", offs)
	}
	cmp.same(200, "PATCH", "/connectors/"+src+"/offsets", fmt.Sprintf(`{"offsets":[{"partition":{"filename":%q},"offset":{"position":5}},{"partition":{"filename":"other"},"offset":null}]}`, file))
	cmp.eventually(200, "GET", "/connectors/"+src+"/offsets")
	cmp.same(200, "DELETE", "/connectors/"+src+"/offsets", "")
}

// TestIntegrationPrimitiveConvertersSinkLikeKafkaConnect: the same records,
// read by a FileStreamSink through the primitive converters (as value and
// header converters) on kcd and on Kafka Connect, make the same files.
func TestIntegrationPrimitiveConvertersSinkLikeKafkaConnect(t *testing.T) {
	connectURL := testenv.Require(t, testenv.ConnectURL)
	brokers := testenv.Require(t, testenv.Kafka)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	k := side{"kcd", startKcdNode(t, brokers)}
	c := side{"Kafka Connect", connectURL}
	p := fmt.Sprintf("kcd-golden-prim-%d-", time.Now().UnixNano())
	t.Cleanup(func() { deleteConnectors(t, c, p, brokers) })
	cmp := comparer{t: t, k: k, c: c, prefix: p}

	be := func(n int, v uint64) []byte {
		b := make([]byte, n)
		for i := range n {
			b[n-1-i] = byte(v >> (8 * i))
		}
		return b
	}
	cases := []struct {
		class  string
		values [][]byte
	}{
		{"org.apache.kafka.connect.converters.IntegerConverter", [][]byte{be(4, 5), be(4, 0xffffffff), be(4, 0x7fffffff), nil}},
		{"org.apache.kafka.connect.converters.LongConverter", [][]byte{be(8, 1234567890123), be(8, 1<<63)}},
		{"org.apache.kafka.connect.converters.ShortConverter", [][]byte{be(2, 0x8000), be(2, 7)}},
		{"org.apache.kafka.connect.converters.DoubleConverter", [][]byte{be(8, math.Float64bits(1.5)), be(8, math.Float64bits(math.Pi)), be(8, math.Float64bits(math.Inf(-1))), be(8, math.Float64bits(1e21)), be(8, math.Float64bits(1e-7))}},
		{"org.apache.kafka.connect.converters.FloatConverter", [][]byte{be(4, uint64(math.Float32bits(3.14159))), be(4, uint64(math.Float32bits(float32(math.NaN())))), be(4, uint64(math.Float32bits(1e10)))}},
		{"org.apache.kafka.connect.converters.BooleanConverter", [][]byte{{1}, {0}}},
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	dir := t.TempDir()
	for i, tc := range cases {
		topic := fmt.Sprintf("%stopic%d", p, i)
		createTopic(ctx, t, brokers, topic)
		for _, v := range tc.values {
			r := &kgo.Record{Topic: topic, Value: v, Headers: []kgo.RecordHeader{{Key: "n", Value: be(8, 42)}}}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		for _, s := range []side{k, c} {
			out := filepath.Join(dir, fmt.Sprintf("%d-%s.txt", i, s.name[:3]))
			body := fmt.Sprintf(`{"connector.class":"FileStreamSink","file":%q,"topics":%q,"value.converter":%q,"header.converter":"org.apache.kafka.connect.converters.LongConverter","key.converter":"org.apache.kafka.connect.converters.ByteArrayConverter"}`, out, topic, tc.class)
			if r := s.do(t, "PUT", "/connectors/"+fmt.Sprintf("%ssink%d", p, i)+"/config", body); r.status != 201 {
				t.Fatalf("%s: create the sink of %s: %d %s", s.name, tc.class, r.status, r.body)
			}
		}
	}
	for i, tc := range cases {
		cmp.waitState(ctx, fmt.Sprintf("%ssink%d", p, i), "RUNNING", 1)
		var files [2]string
		for j, s := range []side{k, c} {
			out := filepath.Join(dir, fmt.Sprintf("%d-%s.txt", i, s.name[:3]))
			waitUntil(t, time.Until(deadlineOf(ctx)), 100*time.Millisecond, fmt.Sprintf("%s: %s to write %d lines", s.name, tc.class, len(tc.values)), func() (bool, string) {
				b, _ := os.ReadFile(out)
				files[j] = string(b)
				return strings.Count(files[j], "\n") >= len(tc.values), fmt.Sprintf("%q", b)
			})
		}
		if files[0] != files[1] {
			t.Errorf("%s: kcd wrote %q, Kafka Connect %q", tc.class, files[0], files[1])
		}
	}
}

// deadlineOf is ctx's deadline, or a minute from now without one.
func deadlineOf(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(time.Minute)
}
