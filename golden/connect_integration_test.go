package golden

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/internal/testenv"
	"github.com/kcd-project/kcd/migrate"
)

// TestIntegrationConnectFileStreamSource drives the real Kafka Connect worker:
// a FileStreamSourceConnector created through its REST API sends a file's
// lines to Kafka, and its config, offset and status records appear in the
// three internal topics in the format migrate decodes.
func TestIntegrationConnectFileStreamSource(t *testing.T) {
	connect := testenv.Require(t, testenv.ConnectURL)
	brokers := testenv.Require(t, testenv.Kafka)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	stamp := time.Now().UnixNano()
	name := fmt.Sprintf("file-source-%d", stamp)
	topic := fmt.Sprintf("kcd-golden-file-%d", stamp)
	file := filepath.Join(t.TempDir(), "input.txt")
	lines := []string{"alpha", "beta", "gamma", "delta", "epsilon"}
	content := strings.Join(lines, "\n") + "\n"
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}

	status, body := call(t, "POST", connect+"/connectors", map[string]any{
		"name": name,
		"config": map[string]string{
			"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
			"tasks.max":       "1",
			"file":            file,
			"topic":           topic,
		},
	})
	mustf(t, status == 201, "create connector: %d %s", status, body)
	t.Cleanup(func() { call(t, "DELETE", connect+"/connectors/"+name, nil) })

	// The lines arrive in Kafka, in order, in JsonConverter's envelope.
	var got []string
	readTopicUntil(ctx, t, brokers, topic, func(r *kgo.Record) bool {
		env := decode[struct {
			Schema  struct{ Type string }
			Payload string
		}](t, "record value", r.Value)
		mustf(t, env.Schema.Type == "string", "schema of a line: %s", r.Value)
		got = append(got, env.Payload)
		return len(got) == len(lines)
	})
	mustf(t, strings.Join(got, ",") == strings.Join(lines, ","), "lines in Kafka: %v", got)

	// The status API says RUNNING for the connector and its task.
	var st connectorStatus
	for {
		status, body = call(t, "GET", connect+"/connectors/"+name+"/status", nil)
		if status == 200 {
			st = decode[connectorStatus](t, "status", body)
			if st.Connector.State == "RUNNING" && len(st.Tasks) == 1 && st.Tasks[0].State == "RUNNING" {
				break
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("connector not RUNNING: %d %s", status, body)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// connect-configs: the connector's config record.
	cfgRec := readTopicUntil(ctx, t, brokers, "connect-configs", func(r *kgo.Record) bool { return string(r.Key) == "connector-"+name })
	cr, err := migrate.DecodeConfigRecord(string(cfgRec.Key), cfgRec.Value)
	mustf(t, err == nil, "decode %s: %v", cfgRec.Key, err)
	mustf(t, cr.Kind == migrate.KindConnector && cr.Connector == name, "config record %+v", cr)
	mustf(t, cr.Properties["file"] != nil && *cr.Properties["file"] == file, "file property: %+v", cr.Properties)
	taskRec := readTopicUntil(ctx, t, brokers, "connect-configs", func(r *kgo.Record) bool { return string(r.Key) == "task-"+name+"-0" })
	tr, err := migrate.DecodeConfigRecord(string(taskRec.Key), taskRec.Value)
	mustf(t, err == nil && tr.Kind == migrate.KindTask && tr.Task == 0 && tr.Connector == name, "task record %+v %v", tr, err)

	// connect-offsets: the source offset reaches the end of the file.
	readTopicUntil(ctx, t, brokers, "connect-offsets", func(r *kgo.Record) bool {
		or, err := migrate.DecodeOffsetRecord(r.Key, r.Value)
		if err != nil || or.Connector != name {
			return false
		}
		mustf(t, or.Partition["filename"] == file, "source partition %v", or.Partition)
		return or.Offset != nil && or.Offset["position"] == json.Number(fmt.Sprint(len(content)))
	})

	// connect-status: the connector's RUNNING status, written by this worker.
	statusRec := readTopicUntil(ctx, t, brokers, "connect-status", func(r *kgo.Record) bool {
		sr, err := migrate.DecodeStatusRecord(string(r.Key), r.Value)
		return err == nil && sr.Connector == name && sr.Task == -1 && sr.State == "RUNNING"
	})
	sr, _ := migrate.DecodeStatusRecord(string(statusRec.Key), statusRec.Value)
	mustf(t, sr.WorkerID == st.Connector.WorkerID, "status record worker %q, REST says %q", sr.WorkerID, st.Connector.WorkerID)

	status, body = call(t, "DELETE", connect+"/connectors/"+name, nil)
	mustf(t, status == 204, "delete connector: %d %s", status, body)
}

// connectorStatus is the part of Kafka Connect's ConnectorStateInfo the tests read.
type connectorStatus struct {
	Connector struct {
		State    string `json:"state"`
		WorkerID string `json:"worker_id"`
	} `json:"connector"`
	Tasks []struct {
		State string `json:"state"`
	} `json:"tasks"`
}
