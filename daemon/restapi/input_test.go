package restapi

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/daemon/herder"
	"github.com/kcd-project/kcd/daemon/herder/herdertest"
)

// Names a connector could be created with but then not be addressed by,
// or whose store keys would not fit, are refused with a 400 before
// anything is written.
func TestUnservableConnectorNamesAreRefused(t *testing.T) {
	h, s := connectAPI(t)
	before, _ := s.Raw().Revision(context.Background())
	long := strings.Repeat("x", connectstore.MaxNameBytes+1)
	cfg := `"config":{"connector.class":"FakeSource","topic":"t"}`
	for _, c := range []struct {
		method, path, body, msg string
	}{
		{"POST", "/connectors", `{"name":"a/b",` + cfg + `}`, "must not contain '/'"},
		{"POST", "/connectors", `{"name":".",` + cfg + `}`, `must not be "."`},
		{"POST", "/connectors", `{"name":"..",` + cfg + `}`, `must not be ".."`},
		{"POST", "/connectors", "{\"name\":\"x\xffy\"," + cfg + `}`, "must be valid UTF-8"},
		{"POST", "/connectors", `{"name":"x\u0001y",` + cfg + `}`, "String may not contain control sequences"},
		{"POST", "/connectors", `{"name":"` + strings.Repeat("x", 1003) + `",` + cfg + `}`, fmt.Sprintf("at most %d bytes once URL-escaped", connectstore.MaxNameBytes)},
		{"POST", "/connectors", `{"name":"` + long + `",` + cfg + `}`, "once URL-escaped"},
		// Each é is two bytes, six once escaped.
		{"POST", "/connectors", `{"name":"` + strings.Repeat("é", connectstore.MaxNameBytes/6+1) + `",` + cfg + `}`, "once URL-escaped"},
		{"PUT", "/connectors/x%FFy/config", `{"connector.class":"FakeSource","topic":"t"}`, "must be valid UTF-8"},
		{"PUT", "/connectors/" + long + "/config", `{"connector.class":"FakeSource","topic":"t"}`, "once URL-escaped"},
	} {
		r := send(t, h, c.method, c.path, c.body)
		var e ErrorMessage
		if err := json.Unmarshal(r.body, &e); err != nil || r.status != 400 || e.ErrorCode != 400 || !strings.Contains(e.Message, c.msg) {
			t.Errorf("%s %s %.60s:\n got %d %.300s\nwant 400 with %q", c.method, c.path, c.body, r.status, r.body, c.msg)
		}
	}
	if after, _ := s.Raw().Revision(context.Background()); after != before {
		t.Errorf("refused requests wrote to the store: revision %d → %d", before, after)
	}
	// The longest name is fine, and reachable.
	longest := strings.Repeat("x", connectstore.MaxNameBytes)
	send(t, h, "POST", "/connectors", `{"name":"`+longest+`",`+cfg+`}`).expect(t, 201, "")
	send(t, h, "GET", "/connectors/"+longest+"/config", "").expect(t, 200, "")
}

// tasks.max is capped by the workers' setting: validate reports it on
// tasks.max in Kafka Connect's format, and create and update refuse it.
func TestTasksMaxAboveTheCapIsRefused(t *testing.T) {
	herdertest.Register()
	s := herdertest.Store(t)
	quiet := slog.New(slog.DiscardHandler)
	h := NewHandler(&fakeNode{ready: true, clusterID: "c"}, Options{Connect: herder.New(s, herder.Options{Logger: quiet, MaxTasksPerConnector: 50}), Logger: quiet})

	r := send(t, h, "PUT", "/connector-plugins/FakeSource/config/validate", `{"name":"v","connector.class":"FakeSource","topic":"t","tasks.max":"51"}`)
	var infos herder.ConfigInfos
	if err := json.Unmarshal(r.body, &infos); err != nil || r.status != 200 {
		t.Fatalf("validate: %d %s", r.status, r.body)
	}
	var errs []string
	for _, c := range infos.Configs {
		if c.Value.Name == "tasks.max" {
			errs = c.Value.Errors
		}
	}
	want := "Invalid value 51 for configuration tasks.max: Value must be no more than 50 (the workers' max-tasks-per-connector)"
	if infos.ErrorCount != 1 || len(errs) != 1 || errs[0] != want {
		t.Errorf("validate: error_count %d, tasks.max errors %q; want 1, %q", infos.ErrorCount, errs, want)
	}

	for _, c := range []struct{ method, path, body string }{
		{"POST", "/connectors", `{"name":"big","config":{"connector.class":"FakeSource","topic":"t","tasks.max":"1000000"}}`},
		{"PUT", "/connectors/big/config", `{"connector.class":"FakeSource","topic":"t","tasks.max":"51"}`},
	} {
		r := send(t, h, c.method, c.path, c.body)
		var e ErrorMessage
		if err := json.Unmarshal(r.body, &e); err != nil || r.status != 400 || !strings.Contains(e.Message, "Value must be no more than 50") {
			t.Errorf("%s %s: %d %s", c.method, c.path, r.status, r.body)
		}
	}
	send(t, h, "POST", "/connectors", `{"name":"ok","config":{"connector.class":"FakeSource","topic":"t","tasks.max":"50"}}`).expect(t, 201, "")
	send(t, h, "PATCH", "/connectors/ok/config", `{"tasks.max":"51"}`).expect(t, 400, "")
}
