package migrate

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDecodeConfigRecords(t *testing.T) {
	s := func(v string) *string { return &v }
	cases := []struct {
		key, value string
		want       ConfigRecord
	}{
		{"connector-my-conn", `{"properties":{"name":"my-conn","tasks.max":"2","x":null}}`,
			ConfigRecord{Kind: KindConnector, Connector: "my-conn", Properties: map[string]*string{"name": s("my-conn"), "tasks.max": s("2"), "x": nil}}},
		{"task-my-conn-10", `{"properties":{"task.class":"T"}}`,
			ConfigRecord{Kind: KindTask, Connector: "my-conn", Task: 10, Properties: map[string]*string{"task.class": s("T")}}},
		{"commit-my-conn", `{"tasks":2}`, ConfigRecord{Kind: KindCommit, Connector: "my-conn", TaskCount: 2}},
		{"target-state-c", `{"state":"PAUSED","state.v2":"STOPPED"}`, ConfigRecord{Kind: KindTargetState, Connector: "c", TargetState: "STOPPED"}},
		{"target-state-c", `{"state":"PAUSED"}`, ConfigRecord{Kind: KindTargetState, Connector: "c", TargetState: "PAUSED"}},
		{"restart-connector-c", `{"include-tasks":true,"only-failed":false}`, ConfigRecord{Kind: KindRestart, Connector: "c", IncludeTask: true}},
		{"tasks-fencing-c", `{"task-count":3}`, ConfigRecord{Kind: KindTasksFencing, Connector: "c", TaskCount: 3}},
		{"logger-cluster-org.apache", `{"level":"DEBUG"}`, ConfigRecord{Kind: KindLoggerLevel, Namespace: "org.apache", Level: "DEBUG"}},
		{"session-key", `{"key":"c2VjcmV0","algorithm":"HmacSHA256","creation-timestamp":1}`, ConfigRecord{Kind: KindSessionKey}},
	}
	for _, c := range cases {
		got, err := DecodeConfigRecord(c.key, []byte(c.value))
		if err != nil {
			t.Errorf("%s: %v", c.key, err)
			continue
		}
		if a, b := jsonOf(t, got), jsonOf(t, c.want); a != b {
			t.Errorf("%s:\n got %s\nwant %s", c.key, a, b)
		}
	}
}

func TestDecodeConfigTombstones(t *testing.T) {
	rec, err := DecodeConfigRecord("connector-a-b", nil)
	if err != nil || !rec.Tombstone || rec.Connector != "a-b" || rec.Kind != KindConnector {
		t.Fatalf("%+v %v", rec, err)
	}
}

func TestDecodeConfigRejectsBadRecords(t *testing.T) {
	cases := map[string]string{
		"something-else":  `{}`,
		"task-conn":       `{"properties":{}}`,
		"task-conn-x":     `{"properties":{}}`,
		"connector-c":     `{"properties":`,
		"commit-c":        `{"tasks":-1}`,
		"target-state-c":  `{"state":"SLEEPING"}`,
		"connector-":      `{"properties":{}}`,
		"connector-c ":    `{"props":{}}`,
		"commit-trailing": `{"tasks":1} {}`,
	}
	for key, value := range cases {
		if _, err := DecodeConfigRecord(key, []byte(value)); err == nil {
			t.Errorf("%s %s: accepted", key, value)
		} else if !strings.Contains(err.Error(), key) {
			t.Errorf("%s: error does not name the key: %v", key, err)
		}
	}
}

func TestDecodeOffsetRecord(t *testing.T) {
	rec, err := DecodeOffsetRecord([]byte(`["local-file-source",{"filename":"/tmp/test.txt"}]`), []byte(`{"position":12345678901234}`))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Connector != "local-file-source" || rec.Partition["filename"] != "/tmp/test.txt" {
		t.Errorf("%+v", rec)
	}
	if rec.Offset["position"] != json.Number("12345678901234") {
		t.Errorf("position not kept exactly: %#v", rec.Offset["position"])
	}
	tomb, err := DecodeOffsetRecord([]byte(`["c",{"p":1}]`), nil)
	if err != nil || tomb.Offset != nil {
		t.Errorf("tombstone: %+v %v", tomb, err)
	}
	for _, bad := range []string{`["c"]`, `[1,{}]`, `["c",[1]]`, `{"c":1}`, `["c",{}]x`} {
		if _, err := DecodeOffsetRecord([]byte(bad), []byte(`{}`)); err == nil {
			t.Errorf("key %s accepted", bad)
		}
	}
}

func TestDecodeStatusRecord(t *testing.T) {
	rec, err := DecodeStatusRecord("status-task-my-conn-3", []byte(`{"state":"FAILED","trace":"boom","worker_id":"10.0.0.5:8083","generation":7}`))
	if err != nil {
		t.Fatal(err)
	}
	want := StatusRecord{Connector: "my-conn", Task: 3, State: "FAILED", Trace: "boom", WorkerID: "10.0.0.5:8083", Generation: 7}
	if rec != want {
		t.Errorf("got %+v", rec)
	}
	rec, err = DecodeStatusRecord("status-connector-c", []byte(`{"state":"RUNNING","trace":null,"worker_id":"w:1","generation":2}`))
	if err != nil || rec.Task != -1 || rec.State != "RUNNING" {
		t.Errorf("%+v %v", rec, err)
	}
	rec, err = DecodeStatusRecord("status-topic-orders:connector-c", []byte(`{"topic":{}}`))
	if err != nil || !rec.IsTopic || rec.Topic != "orders" || rec.Connector != "c" {
		t.Errorf("%+v %v", rec, err)
	}
	for key, value := range map[string]string{
		"status-task-c":      `{"state":"RUNNING"}`,
		"status-connector-c": `{"state":"NAPPING"}`,
		"status-other":       `{}`,
	} {
		if _, err := DecodeStatusRecord(key, []byte(value)); err == nil {
			t.Errorf("%s accepted", key)
		}
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
