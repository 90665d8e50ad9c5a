package javahost

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/javahost/hostpb"
)

func TestHostWithoutPluginPathNeverStarts(t *testing.T) {
	h := New(Options{Dir: t.TempDir(), Logger: quiet()})
	defer h.Close()
	if h.Enabled() {
		t.Fatal("a host without a plugin path is enabled")
	}
	if _, err := h.Conn(context.Background()); err == nil || !strings.Contains(err.Error(), "--plugin-path") {
		t.Fatalf("Conn: %v, want the missing plugin path", err)
	}
	p := NewProvider(h)
	if _, ok := p.Lookup("io.example.Anything"); ok || len(p.Plugins()) != 0 || h.Pid() != 0 {
		t.Fatal("a provider without a plugin path found something or started a host")
	}
}

func TestHostMissingJarFailsFastAndBacksOff(t *testing.T) {
	h := New(Options{Dir: t.TempDir(), PluginPath: []string{t.TempDir()}, Java: "/nonexistent/java", Logger: quiet()})
	defer h.Close()
	start := time.Now()
	_, err := h.Conn(context.Background())
	if err == nil || !strings.Contains(err.Error(), JarName) || !strings.Contains(err.Error(), "--java-host-dir") {
		t.Fatalf("Conn: %v, want the missing jar and the setting", err)
	}
	_, err = h.Conn(context.Background())
	if err == nil || !strings.Contains(err.Error(), "java host is down, next start in") || !strings.Contains(err.Error(), JarName) {
		t.Fatalf("second Conn: %v, want the backoff with the first reason", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("failing took %v", d)
	}
	// A lookup during the backoff answers at once: a supervisor asks
	// again at each reconcile.
	p := NewProvider(h)
	start = time.Now()
	if _, ok := p.Lookup("io.example.Anything"); ok {
		t.Fatal("found a plugin of a host that cannot start")
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("a lookup during the backoff took %v", d)
	}
}

func TestConfigDefOfHostKeys(t *testing.T) {
	def := "5"
	d := configDefOf(nil)
	if len(d) != 0 {
		t.Fatal(d)
	}
	d = configDefOf([]*hostpb.ConfigKey{
		{Name: "batch.size", Type: "INT", DefaultValue: &def, HasDefault: true, Importance: "LOW", Group: "g", OrderInGroup: 2, Width: "SHORT"},
		{Name: "topic", Type: "STRING", Importance: "HIGH"},
		{Name: "opt", Type: "PASSWORD", HasDefault: true},
	})
	if k, _ := d.Key("batch.size"); k.Default == nil || *k.Default != "5" || k.Type != connect.TypeInt || k.Order != 2 || k.Width != connect.WidthShort {
		t.Errorf("batch.size: %+v", k)
	}
	if k, _ := d.Key("topic"); k.Default != nil || k.Importance != connect.High {
		t.Errorf("topic (required): %+v", k)
	}
	if k, _ := d.Key("opt"); k.Default != nil || !k.NullDefault || k.Required() || k.Type != connect.TypePassword {
		t.Errorf("opt (default null): %+v", k)
	}
}

func TestOffsetJSONKeepsNumbersAsKcdStoresThem(t *testing.T) {
	in := []byte(`{"lsn":18446744073709551615,"ts_usec":1.5,"file":"x","snapshot":true,"txId":null}`)
	m, err := decodeJSONMap(in)
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := m["lsn"].(json.Number); !ok || n.String() != "18446744073709551615" {
		t.Fatalf("lsn %T %v, want the json.Number as written", m["lsn"], m["lsn"])
	}
	out, err := encodeJSONMap(m)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"file":"x","lsn":18446744073709551615,"snapshot":true,"ts_usec":1.5,"txId":null}` {
		t.Fatalf("encoded %s", out)
	}
	if m, err := decodeJSONMap(nil); m != nil || err != nil {
		t.Fatalf("empty: %v %v", m, err)
	}
	if b, err := encodeJSONMap(nil); b != nil || err != nil {
		t.Fatalf("nil: %q %v", b, err)
	}
}
