package restapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kcd-project/kcd/daemon/connect/transforms"
	"github.com/kcd-project/kcd/daemon/herder"
	"github.com/kcd-project/kcd/daemon/herder/herdertest"
)

func TestBadConnectorRequestsChangeNothing(t *testing.T) {
	h, s := connectAPI(t)
	send(t, h, "POST", "/connectors", `{"name":"keep","config":{"connector.class":"FakeSource","topic":"t"}}`).expect(t, 201, "")
	before, _ := s.Raw().Revision(context.Background())
	invalid := "Connector configuration is invalid and contains the following "
	for _, c := range []struct {
		method, path, body string
		status             int
		msg                string
	}{
		{"POST", "/connectors", `{"name":"x",`, 400, "request body is not valid JSON for this request"},
		{"POST", "/connectors", ``, 400, "request body is not valid JSON for this request"},
		{"POST", "/connectors", `[]`, 400, "request body is not valid JSON for this request"},
		{"POST", "/connectors", `{"name":"x","config":{},"unknown":1}`, 400, `request body is not valid JSON for this request: json: unknown field "unknown"`},
		{"POST", "/connectors", `{"name":"x","config":{"connector.class":"FakeSource","topic":"t"},"initial_state":"bogus"}`, 400, `initial_state "bogus" is not one of`},
		{"POST", "/connectors", `{"name":"x","config":{"name":"y","connector.class":"FakeSource","topic":"t"}}`, 400,
			"Connector name configuration (y) doesn't match connector name in the URL (x)"},
		{"POST", "/connectors", `{"name":"x","config":{"connector.class":"FakeSource","topic":{"a":1}}}`, 400, `setting "topic": a value must be a string`},
		{"POST", "/connectors", `{"name":"x","config":{}}`, 400, "Connector config {name=x} contains no connector type"},
		{"POST", "/connectors", `{"name":"x"}`, 400, "Connector config {name=x} contains no connector type"},
		{"POST", "/connectors", `{"name":"x","config":{"connector.class":"Nope"}}`, 400,
			"org.apache.kafka.connect.errors.ConnectException: Failed to find any class that implements Connector and which name matches Nope, available connectors are: PluginDesc{klass=class "},
		{"POST", "/connectors", `{"name":"x","config":{"connector.class":"FakeSource"}}`, 400,
			invalid + "1 error(s):\nMissing required configuration \"topic\" which has no default value.\nYou can also find the above list of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`"},
		{"POST", "/connectors", `{"name":"x","config":{"connector.class":"FakeSource","topic":"t","tasks.max":"lots"}}`, 400,
			invalid + "2 error(s):\nInvalid value lots for configuration tasks.max: Not a number of type INT\n"},
		{"POST", "/connectors", `{"name":"x","config":{"connector.class":"FakeSource","topic":"t","batch.size":true}}`, 400,
			invalid + "1 error(s):\nInvalid value true for configuration batch.size: Not a number of type INT\n"},
		{"POST", "/connectors", `{"name":"keep","config":{"connector.class":"FakeSource","topic":"t"}}`, 409, "Connector keep already exists"},
		{"PUT", "/connectors/keep/config", `{"name":"other","connector.class":"FakeSource","topic":"t"}`, 400,
			"Connector name configuration (other) doesn't match connector name in the URL (keep)"},
		{"PUT", "/connectors/keep/config", `not json`, 400, "request body is not valid JSON for this request"},
		{"PUT", "/connectors/keep/config", `null`, 400, "request body must be a JSON object"},
		{"PUT", "/connectors/keep/config", `{"connector.class":"FakeSource"}`, 400, invalid + "1 error(s)"},
		{"PUT", "/connectors/keep/config", `{"connector.class":"FakeSource","topic":"t","key.converter":"com.example.Avro"}`, 400,
			invalid + "1 error(s):\nInvalid value com.example.Avro for configuration key.converter: Class com.example.Avro could not be found."},
		{"PATCH", "/connectors/keep/config", `{"name":"other"}`, 400, "Connector name configuration (other) doesn't match connector name in the URL (keep)"},
		{"PATCH", "/connectors/keep/config", `{"topic":null}`, 400, invalid + "1 error(s):\nMissing required configuration \"topic\""},
		{"PATCH", "/connectors/keep/config", `{"tasks.max":"0"}`, 400, invalid + "1 error(s):\nInvalid value 0 for configuration tasks.max: Value must be at least 1"},
		{"PATCH", "/connectors/keep/config", `{"connector.class":"FakeSink"}`, 400,
			invalid + "2 error(s):\nMust configure one of topics or topics.regex\nMust configure one of topics or topics.regex\n"},
	} {
		r := send(t, h, c.method, c.path, c.body)
		var e ErrorMessage
		if err := json.Unmarshal(r.body, &e); err != nil || r.status != c.status || e.ErrorCode != c.status || !strings.HasPrefix(e.Message, c.msg) {
			t.Errorf("%s %s %s:\n got %d %s\nwant %d %q...", c.method, c.path, c.body, r.status, r.body, c.status, c.msg)
		}
	}
	if after, _ := s.Raw().Revision(context.Background()); after != before {
		t.Errorf("rejected requests wrote to the store (revision %d -> %d)", before, after)
	}
	send(t, h, "GET", "/connectors/keep/config", "").expect(t, 200, `{"connector.class":"FakeSource","topic":"t","name":"keep"}`)
	send(t, h, "GET", "/connectors", "").expect(t, 200, `["keep"]`)
}

func TestPluginEndpoints(t *testing.T) {
	h, _ := connectAPI(t)
	r := send(t, h, "GET", "/connector-plugins", "")
	var plugins []herder.PluginInfo
	if err := json.Unmarshal(r.body, &plugins); err != nil || r.status != 200 || len(plugins) < 3 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	for _, p := range plugins {
		if p.Type != herder.PluginSource && p.Type != herder.PluginSink {
			t.Errorf("connectorsOnly by default, got %+v", p)
		}
	}
	var all []herder.PluginInfo
	r = send(t, h, "GET", "/connector-plugins?connectorsOnly=false", "")
	// The 7 converters and header converters, and kcd's transformations
	// and predicates.
	if err := json.Unmarshal(r.body, &all); err != nil || len(all) != len(plugins)+7+len(transforms.Transformations())+len(transforms.Predicates()) {
		t.Errorf("all plugins: %s", r.body)
	}

	r = send(t, h, "GET", "/connector-plugins/FakeSink/config", "")
	var keys []herder.ConfigKeyInfo
	if err := json.Unmarshal(r.body, &keys); err != nil || r.status != 200 || keys[0].Name != "file" || keys[1].Name != "name" {
		t.Errorf("plugin config: %d %s", r.status, r.body)
	}
	if !strings.Contains(string(r.body), `"order_in_group":1`) || !strings.Contains(string(r.body), `"group":null`) {
		t.Errorf("plugin config shape: %s", r.body)
	}
	send(t, h, "GET", "/connector-plugins/Nope/config", "").expectError(t, 404, "Unknown plugin Nope.")

	r = send(t, h, "PUT", "/connector-plugins/FakeSinkConnector/config/validate", `{"connector.class":"FakeSink","name":"n","tasks.max":"0"}`)
	var infos herder.ConfigInfos
	if err := json.Unmarshal(r.body, &infos); err != nil || r.status != 200 {
		t.Fatalf("validate: %d %s", r.status, r.body)
	}
	if infos.Name != "FakeSink" || infos.ErrorCount != 3 || infos.Groups[0] != "Common" {
		t.Errorf("validate: %+v", infos)
	}
	var raw map[string]any
	_ = json.Unmarshal(r.body, &raw)
	first := raw["configs"].([]any)[0].(map[string]any)
	if len(first) != 2 || len(first["definition"].(map[string]any)) != 11 || len(first["value"].(map[string]any)) != 5 {
		t.Errorf("config entry shape: %v", first)
	}
	send(t, h, "PUT", "/connector-plugins/FakeSink/config/validate", `{}`).expectError(t, 400, "Connector config {} contains no connector type")
	send(t, h, "PUT", "/connector-plugins/FakeSink/config/validate", `{"connector.class":"FakeSource"}`).
		expectError(t, 400, "Included connector type FakeSource does not match request type FakeSink")
	send(t, h, "PUT", "/connector-plugins/Nope/config/validate", `{"connector.class":"Nope"}`).
		expectError(t, 400, "Failed to find any class that implements Connector and which name matches Nope")
	send(t, h, "PUT", "/connector-plugins/FakeSink/config/validate", `{`).expectError(t, 400, "request body is not valid JSON")
	_ = herdertest.SinkClass
}

func TestConnectorEndpointsWithoutStore(t *testing.T) {
	h := NewHandler(&fakeNode{ready: true}, Options{})
	for _, p := range []string{"/connectors", "/connector-plugins", "/connectors/x/status"} {
		send(t, h, "GET", p, "").expectError(t, 503, "this node does not serve connectors")
	}
}

// A body over MaxBody is a 413 that names the limit, whether its length
// is declared or not.
func TestLargeBodiesAreRefused(t *testing.T) {
	h, _ := connectAPI(t)
	big := `{"connector.class":"FakeSource","topic":"` + strings.Repeat("x", MaxBody) + `"}`
	msg := "request body is larger than 4194304 bytes (4 MiB), the limit of this API"
	send(t, h, "PUT", "/connectors/big/config", big).expectError(t, 413, msg)
	// Chunked: no Content-Length to refuse up front.
	req := httptest.NewRequest("POST", "/connectors", io.MultiReader(strings.NewReader(`{"name":"big","config":`+big+`}`)))
	req.ContentLength = -1
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var e ErrorMessage
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || rec.Code != 413 || e.ErrorCode != 413 || e.Message != msg {
		t.Errorf("chunked large body: %d %s", rec.Code, rec.Body)
	}
	send(t, h, "GET", "/connectors", "").expect(t, 200, `[]`)
}
