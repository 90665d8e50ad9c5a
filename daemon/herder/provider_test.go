package herder_test

import (
	"slices"
	"testing"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/herder"
)

// fakeProvider stands for the Java host's catalogue.
type fakeProvider struct{ p *connect.Plugin }

func (f fakeProvider) Lookup(name string) (*connect.Plugin, bool) {
	if name == f.p.Class || name == "JavaThing" {
		return f.p, true
	}
	return nil, false
}
func (f fakeProvider) Plugins() []*connect.Plugin { return []*connect.Plugin{f.p} }
func (f fakeProvider) OtherPlugins() []connect.PluginDesc {
	return []connect.PluginDesc{
		{Class: "io.example.AvroConverter", Type: "converter", Version: "7.0"},
		{Class: "io.example.Mask", Type: "transformation", Version: "7.0"},
		{Class: herder.StringConverter, Type: "converter", Version: "4.3.1"}, // kcd has its own
	}
}

func TestPluginsOfAProvider(t *testing.T) {
	h, _ := newHerderStore(t)
	before := h.Plugins(false)
	unregister := connect.RegisterProvider(fakeProvider{&connect.Plugin{Class: "io.example.JavaThingConnector", Type: connect.PluginSink, Version: "7.0",
		New: func() connect.Connector { return nil }}})
	defer unregister()

	conns := h.Plugins(true)
	if !slices.ContainsFunc(conns, func(p herder.PluginInfo) bool {
		return p.Class == "io.example.JavaThingConnector" && p.Type == herder.PluginSink && p.Version == "7.0"
	}) {
		t.Errorf("connectors %+v lack the provider's", conns)
	}
	all := h.Plugins(false)
	for _, want := range []herder.PluginInfo{
		{Class: "io.example.AvroConverter", Type: herder.PluginConverter, Version: "7.0"},
		{Class: "io.example.Mask", Type: herder.PluginTransformation, Version: "7.0"},
	} {
		if !slices.Contains(all, want) {
			t.Errorf("all plugins lack %+v", want)
		}
	}
	if len(all) != len(before)+3 {
		t.Errorf("%d plugins with the provider, %d without: want 3 more (kcd's StringConverter once)", len(all), len(before))
	}
	if p, ok := connect.Lookup("JavaThing"); !ok || p.Class != "io.example.JavaThingConnector" {
		t.Errorf("lookup of the provider's alias: %v %v", p, ok)
	}
	if keys, err := h.PluginConfig("io.example.Mask", ""); err != nil || len(keys) != 0 {
		t.Errorf("config of the provider's transformation: %v %v", keys, err)
	}
	unregister()
	if _, ok := connect.Lookup("JavaThing"); ok {
		t.Error("the provider's plugin is still found after it was removed")
	}
}

// serializedSink is a provider's connector whose converters run elsewhere.
type serializedSink struct{}

func (serializedSink) Version() string                                         { return "7.0" }
func (serializedSink) ConfigDef() connect.ConfigDef                            { return nil }
func (serializedSink) Start(connect.ConnectorContext, map[string]string) error { return nil }
func (serializedSink) TaskConfigs(int) ([]map[string]string, error)            { return nil, nil }
func (serializedSink) Stop() error                                             { return nil }
func (serializedSink) NewTask() connect.SinkTask                               { return nil }
func (serializedSink) SerializedRecords()                                      {}

func TestValidateAcceptsTheProvidersConvertersForItsConnectors(t *testing.T) {
	h, _ := newHerderStore(t)
	defer connect.RegisterProvider(fakeProvider{&connect.Plugin{Class: "io.example.JavaThingConnector", Type: connect.PluginSink, Version: "7.0",
		New: func() connect.Connector { return serializedSink{} }}})()
	infos, err := h.ValidateConfig("io.example.JavaThingConnector", cfg("connector.class", "io.example.JavaThingConnector", "name", "j",
		"topics", "t", "value.converter", "io.example.AvroConverter", "transforms", "m", "transforms.m.type", "io.example.Mask"))
	if err != nil {
		t.Fatal(err)
	}
	if infos.ErrorCount != 0 {
		for _, c := range infos.Configs {
			if len(c.Value.Errors) > 0 {
				t.Errorf("%s: %v", c.Value.Name, c.Value.Errors)
			}
		}
	}
	// A Go connector cannot use them.
	infos, err = h.ValidateConfig("FakeSource", cfg("connector.class", "FakeSource", "value.converter", "io.example.AvroConverter"))
	if err != nil || infos.ErrorCount == 0 {
		t.Errorf("a built-in connector with the provider's converter: %d errors, %v", infos.ErrorCount, err)
	}
}
