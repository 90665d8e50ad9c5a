package migrate

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// fakeKafka starts a kfake cluster with the three internal topics (config
// 1 partition, offsets 5, status 2), compacted as Kafka Connect makes them.
func fakeKafka(t *testing.T, opts ...kfake.Opt) (*kfake.Cluster, *kgo.Client) {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return c, cl
}

func createTopics(t *testing.T, cl *kgo.Client, topics Topics, compact bool) {
	t.Helper()
	adm := kadm.NewClient(cl)
	cfg := map[string]*string{}
	if compact {
		p := "compact"
		cfg["cleanup.policy"] = &p
	}
	for _, tp := range []struct {
		name string
		n    int32
	}{{topics.Config, 1}, {topics.Offset, 5}, {topics.Status, 2}} {
		if tp.name == "" {
			continue
		}
		if _, err := adm.CreateTopic(t.Context(), tp.n, 1, cfg, tp.name); err != nil {
			t.Fatalf("create %s: %v", tp.name, err)
		}
	}
}

func produce(t *testing.T, cl *kgo.Client, recs ...*kgo.Record) {
	t.Helper()
	if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

func record(topic, key, value string) *kgo.Record {
	r := &kgo.Record{Topic: topic, Key: []byte(key)}
	if value != "null" {
		r.Value = []byte(value)
	}
	return r
}

func TestReadFromFakeKafka(t *testing.T) {
	_, cl := fakeKafka(t)
	topics := DefaultTopics()
	createTopics(t, cl, topics, true)
	produce(t, cl,
		record(topics.Config, "connector-src", `{"properties":{"connector.class":"S","tasks.max":"1"}}`),
		record(topics.Config, "task-src-0", `{"properties":{"task.class":"ST"}}`),
		record(topics.Config, "commit-src", `{"tasks":1}`),
		record(topics.Config, "connector-sink", `{"properties":{"connector.class":"K","topics":"t"}}`),
		record(topics.Config, "target-state-sink", `{"state":"PAUSED","state.v2":"STOPPED"}`),
		record(topics.Config, "session-key", `{"key":"c2VjcmV0","algorithm":"HmacSHA256","creation-timestamp":1}`),
		record(topics.Config, "connector-other", `{"properties":{"connector.class":"S"}}`),
		record(topics.Offset, `["src",{"file":"/f"}]`, `{"position":10}`),
		record(topics.Offset, `["src",{"file":"/f"}]`, `{"position":42}`),
		record(topics.Offset, `["gone",{"file":"/g"}]`, `{"position":1}`),
		record(topics.Offset, `not json`, `{}`),
		record(topics.Status, "status-connector-src", `{"state":"RUNNING","trace":null,"worker_id":"w:8083","generation":3}`),
	)
	// The sink's group has committed.
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(t.Context(), 2, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	var offs kadm.Offsets
	offs.AddOffset("t", 1, 7, -1)
	offs.AddOffset("t", 0, 5, -1)
	if _, err := adm.CommitOffsets(t.Context(), "connect-sink", offs); err != nil {
		t.Fatal(err)
	}

	var progress []Progress
	c, err := Read(t.Context(), cl, ReadOptions{
		Include:  func(n string) bool { return n != "other" },
		Progress: func(p Progress) { progress = append(progress, p) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Connectors) != 2 || c.Connectors[0].Name != "sink" || c.Connectors[1].Name != "src" {
		t.Fatalf("connectors %s", jsonOf(t, c.Connectors))
	}
	sink, src := c.Connectors[0], c.Connectors[1]
	if sink.Target != "STOPPED" || sink.SinkGroup != "connect-sink" ||
		jsonOf(t, sink.SinkOffsets) != `[{"topic":"t","partition":0,"offset":5},{"topic":"t","partition":1,"offset":7}]` {
		t.Fatalf("sink %s", jsonOf(t, sink))
	}
	if len(src.Tasks) != 1 || src.Tasks[0]["task.class"] != "ST" || src.Status == nil || src.Status.State != "RUNNING" ||
		len(src.SourceOffsets) != 1 || src.SourceOffsets[0].Offset["position"] != json.Number("42") || src.SinkGroup != "" {
		t.Fatalf("src %s", jsonOf(t, src))
	}
	if c.Orphans["gone"] != 1 {
		t.Fatalf("orphans %v", c.Orphans)
	}
	var reasons []string
	for _, p := range c.Problems {
		reasons = append(reasons, p.Topic+": "+p.Reason)
	}
	if len(c.Problems) != 2 || !strings.Contains(reasons[0], "session key") || c.Problems[1].Topic != topics.Offset || c.Problems[1].Key != "not json" {
		t.Fatalf("problems %s", jsonOf(t, c.Problems))
	}
	if len(c.Stats) != 3 || c.Stats[0].Records != 7 || c.Stats[1].Records != 4 || c.Stats[1].Partitions != 5 || !c.Stats[0].Compacted {
		t.Fatalf("stats %s", jsonOf(t, c.Stats))
	}
	ends := map[string]Progress{}
	for _, p := range progress {
		ends[p.Topic] = p
	}
	if len(ends) != 3 || ends[topics.Offset].Read != 4 || ends[topics.Offset].Total != 4 {
		t.Fatalf("progress %+v", progress)
	}
}

func TestReadTopicChecks(t *testing.T) {
	_, cl := fakeKafka(t)
	// No topics at all: the config topic's absence is an error naming the flag.
	_, err := Read(t.Context(), cl, ReadOptions{Topics: Topics{Config: "my-configs"}})
	if err == nil || !strings.Contains(err.Error(), "topic my-configs does not exist") || !strings.Contains(err.Error(), "--config-topic") {
		t.Fatalf("missing config topic: %v", err)
	}
	topics := Topics{Config: "c1", Offset: "o1", Status: "s1"}
	createTopics(t, cl, Topics{Config: topics.Config}, true)
	_, err = Read(t.Context(), cl, ReadOptions{Topics: topics})
	if err == nil || !strings.Contains(err.Error(), "topic o1 does not exist") || !strings.Contains(err.Error(), "--offset-topic") {
		t.Fatalf("missing offsets topic: %v", err)
	}
	// Offsets not compacted; status missing: problems, not errors. (A
	// new client: kgo serves metadata from a cache for a few seconds.)
	createTopics(t, cl, Topics{Offset: topics.Offset}, false)
	cl2, err := kgo.NewClient(kgo.SeedBrokers(cl.OptValue(kgo.SeedBrokers).([]string)...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	c, err := Read(t.Context(), cl2, ReadOptions{Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Problems) != 2 || !strings.HasPrefix(c.Problems[0].Reason, "not compacted") || c.Problems[0].Topic != "o1" ||
		!strings.Contains(c.Problems[1].Reason, "topic s1 does not exist") || !strings.Contains(c.Problems[1].Reason, "--status-topic") {
		t.Fatalf("problems %s", jsonOf(t, c.Problems))
	}
}

func TestReadUnreachable(t *testing.T) {
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	start := time.Now()
	_, err = Read(t.Context(), cl, ReadOptions{})
	if err == nil || !strings.Contains(err.Error(), "cannot reach the Kafka brokers at 127.0.0.1:1") {
		t.Fatalf("unreachable: %v", err)
	}
	if d := time.Since(start); d > metadataTimeout+5*time.Second {
		t.Fatalf("took %s", d)
	}
}

func TestReadBadCredentials(t *testing.T) {
	c, _ := fakeKafka(t, kfake.EnableSASL(), kfake.Superuser("PLAIN", "admin", "right"))
	// kfake drops the connection on bad credentials; Kafka answers with
	// SASL_AUTHENTICATION_FAILED and a message, as here.
	c.ControlKey(kmsg.SASLAuthenticate.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		resp := req.(*kmsg.SASLAuthenticateRequest).ResponseKind().(*kmsg.SASLAuthenticateResponse)
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := "Authentication failed: Invalid username or password"
		resp.ErrorMessage = &msg
		return resp, nil, true
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...),
		kgo.SASL(plain.Auth{User: "admin", Pass: "wrong"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err = Read(ctx, cl, ReadOptions{})
	if err == nil || !strings.Contains(err.Error(), "Kafka refused the credentials (SASL authentication failed)") {
		t.Fatalf("bad credentials: %v", err)
	}
}

// A broker that accepts connections and never answers: Read gives up at
// its deadline and says so.
func TestReadSilentBroker(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	cl, err := kgo.NewClient(kgo.SeedBrokers(ln.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// The caller's deadline.
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	_, err = Read(ctx, cl, ReadOptions{})
	if err == nil || !strings.Contains(err.Error(), "cannot reach the Kafka brokers at "+ln.Addr().String()) {
		t.Fatalf("silent broker, caller's deadline: %v", err)
	}
	// Read's own, with no deadline from the caller (15 s, shortened here).
	defer func(d time.Duration) { metadataTimeout = d }(metadataTimeout)
	metadataTimeout = time.Second
	start := time.Now()
	_, err = Read(t.Context(), cl, ReadOptions{})
	if err == nil || !strings.Contains(err.Error(), "cannot reach the Kafka brokers at "+ln.Addr().String()) || time.Since(start) > 10*time.Second {
		t.Fatalf("silent broker, Read's deadline: %v after %s", err, time.Since(start))
	}
}

func TestReadNotAuthorized(t *testing.T) {
	c, cl := fakeKafka(t)
	createTopics(t, cl, DefaultTopics(), true)
	// As Kafka answers a user without Describe on the topics.
	c.ControlKey(kmsg.Metadata.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		mreq := req.(*kmsg.MetadataRequest)
		resp := mreq.ResponseKind().(*kmsg.MetadataResponse)
		for _, b := range c.ListenAddrs() {
			host, port, _ := net.SplitHostPort(b)
			p, _ := strconv.Atoi(port)
			resp.Brokers = append(resp.Brokers, kmsg.MetadataResponseBroker{NodeID: 0, Host: host, Port: int32(p)})
		}
		for _, rt := range mreq.Topics {
			t := kmsg.NewMetadataResponseTopic()
			t.Topic = rt.Topic
			t.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, t)
		}
		return resp, nil, true
	})
	_, err := Read(t.Context(), cl, ReadOptions{})
	if err == nil || !strings.Contains(err.Error(), "Kafka denied access to the metadata of topics connect-configs, connect-offsets, connect-status (not authorized") {
		t.Fatalf("not authorized: %v", err)
	}
}

// Kafka stops answering fetches in the middle of a read: Read fails,
// saying so, instead of waiting forever.
func TestReadFetchesStall(t *testing.T) {
	c, cl := fakeKafka(t)
	createTopics(t, cl, DefaultTopics(), true)
	produce(t, cl, record(DefaultTopics().Config, "connector-a", `{"properties":{}}`))
	c.ControlKey(kmsg.Fetch.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		return nil, errors.New("no fetching"), true // kfake closes the connection
	})
	defer func(d time.Duration) { stallTimeout = d }(stallTimeout)
	stallTimeout = time.Second
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	_, err := Read(ctx, cl, ReadOptions{})
	if err == nil || !strings.Contains(err.Error(), "cannot reach the Kafka brokers at") || !strings.Contains(err.Error(), "no fetch answered for 1s") {
		t.Fatalf("stalled fetches: %v", err)
	}
}

// TLS to a listener that does not speak it and answers in plain bytes:
// Read fails at once, saying so.
func TestReadTLSMismatch(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
			c.Close()
		}
	}()
	cl, err := kgo.NewClient(kgo.SeedBrokers(ln.Addr().String()), kgo.DialTLSConfig(&tls.Config{}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	start := time.Now()
	_, err = Read(t.Context(), cl, ReadOptions{})
	if err == nil || !strings.Contains(err.Error(), "TLS with the Kafka brokers at "+ln.Addr().String()+" failed: the broker did not answer in TLS") {
		t.Fatalf("TLS mismatch: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("TLS mismatch found after %s", d)
	}
}
