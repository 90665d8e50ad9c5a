package connect

import "testing"

// stubProvider offers one plugin under its class name.
type stubProvider struct{ p *Plugin }

func (s stubProvider) Lookup(name string) (*Plugin, bool) {
	if name == s.p.Class {
		return s.p, true
	}
	return nil, false
}
func (s stubProvider) Plugins() []*Plugin         { return []*Plugin{s.p} }
func (s stubProvider) OtherPlugins() []PluginDesc { return nil }

// A class both built in and provided resolves to the built-in one unless
// kcd.runtime=java asks for the provider's; kcd.runtime=java never falls
// back to the built-in one, and an unknown value finds nothing.
func TestLookupConfigRuntime(t *testing.T) {
	const class = "kcd.test.registry.BothConnector"
	builtin := Plugin{Class: class, Type: PluginSource, Version: "go", New: func() Connector { return nil }}
	Register(builtin)
	provided := &Plugin{Class: class, Type: PluginSource, Version: "java", New: func() Connector { return nil }}
	only := &Plugin{Class: "kcd.test.registry.JavaOnlyConnector", Type: PluginSink, Version: "java", New: func() Connector { return nil }}
	defer RegisterProvider(stubProvider{provided})()
	defer RegisterProvider(stubProvider{only})()

	for _, tc := range []struct {
		class, runtime, want string // want: the version found, "" none
	}{
		{class, "", "go"},
		{class, "go", "go"},
		{class, " java ", "java"},
		{class, "python", ""},
		{"BothConnector", "", "go"}, // aliases as before
		{only.Class, "java", "java"},
		{only.Class, "", "java"}, // not built in: the provider's anyway
		{"kcd.test.registry.Builtin", "java", ""},
		{"", "java", ""},
	} {
		cfg := map[string]string{"connector.class": tc.class}
		if tc.runtime != "" {
			cfg[RuntimeKey] = tc.runtime
		}
		p, ok := LookupConfig(cfg)
		got := ""
		if ok {
			got = p.Version
		}
		if got != tc.want {
			t.Errorf("LookupConfig(%v) found %q, want %q", cfg, got, tc.want)
		}
	}
	Register(Plugin{Class: "kcd.test.registry.Builtin", Type: PluginSink, New: func() Connector { return nil }})
	if _, ok := LookupConfig(map[string]string{"connector.class": "kcd.test.registry.Builtin", RuntimeKey: "java"}); ok {
		t.Error("kcd.runtime=java found a built-in class no provider has")
	}
}
