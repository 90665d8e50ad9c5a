package connect

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// PluginType is a plugin's kind, as GET /connector-plugins names it.
type PluginType string

// The plugin kinds a connector can be.
const (
	PluginSource PluginType = "source"
	PluginSink   PluginType = "sink"
)

// Plugin is a registered connector class.
type Plugin struct {
	// Class is the Kafka Connect class name, e.g.
	// org.apache.kafka.connect.file.FileStreamSourceConnector.
	Class   string
	Type    PluginType
	Version string
	// New returns a fresh connector instance (a SourceConnector or a
	// SinkConnector, matching Type).
	New func() Connector
	// Aliases are extra names it answers to; the simple class name and the
	// simple name without "Connector" are always aliases.
	Aliases []string
	// TaskClass is the class name of its tasks, which the worker adds to
	// each task config as "task.class", as Kafka Connect does. Empty: the
	// class name with its "Connector" suffix replaced by "Task"
	// (FileStreamSourceConnector: FileStreamSourceTask).
	TaskClass string
}

// TaskClassName is p.TaskClass, or the name derived from p.Class.
func (p *Plugin) TaskClassName() string {
	if p.TaskClass != "" {
		return p.TaskClass
	}
	return strings.TrimSuffix(p.Class, "Connector") + "Task"
}

var (
	regMu   sync.RWMutex
	plugins = map[string]*Plugin{} // by class name and alias
	classes []string
)

// Register adds a connector plugin. It panics on a name already taken, as
// database/sql.Register does: that is a build mistake.
func Register(p Plugin) {
	if p.Class == "" || p.New == nil || (p.Type != PluginSource && p.Type != PluginSink) {
		panic(fmt.Sprintf("connect: invalid plugin %+v", p))
	}
	names := append([]string{p.Class}, aliasesOf(p.Class)...)
	names = append(names, p.Aliases...)
	regMu.Lock()
	defer regMu.Unlock()
	for _, n := range names {
		if other, ok := plugins[n]; ok && other.Class != p.Class {
			panic(fmt.Sprintf("connect: plugin name %q of %s is taken by %s", n, p.Class, other.Class))
		}
	}
	pp := &p
	for _, n := range names {
		plugins[n] = pp
	}
	classes = append(classes, p.Class)
	slices.Sort(classes)
}

// aliasesOf returns the simple class name and, when it ends in
// "Connector", the name without that suffix, as Kafka Connect accepts.
func aliasesOf(class string) []string {
	simple := class[strings.LastIndexByte(class, '.')+1:]
	out := []string{simple}
	if s, ok := strings.CutSuffix(simple, "Connector"); ok && s != "" {
		out = append(out, s)
	}
	return out
}

// Lookup finds a plugin by class name or alias: a built-in one, else a
// provider's.
func Lookup(name string) (*Plugin, bool) {
	name = strings.TrimSpace(name)
	regMu.RLock()
	p, ok := plugins[name]
	regMu.RUnlock()
	if ok || name == "" {
		return p, ok
	}
	for _, pr := range currentProviders() {
		if p, ok := pr.Lookup(name); ok {
			return p, true
		}
	}
	return nil, false
}

// RuntimeKey is the connector config key that picks which implementation
// runs a class that kcd has built in and a provider (the Java connector
// host) has too: "java" the provider's, the plugin's own Java class (e.g.
// Kafka Connect's FileStreamSourceConnector jar); empty or "go" the
// built-in one. Kafka Connect ignores the key, so a config that carries
// it still runs there.
const RuntimeKey = "kcd.runtime"

// The values of RuntimeKey.
const (
	RuntimeGo   = "go"
	RuntimeJava = "java"
)

// LookupConfig finds the plugin a connector config names: its
// connector.class, by RuntimeKey's choice. An unknown RuntimeKey value
// finds nothing.
func LookupConfig(cfg map[string]string) (*Plugin, bool) {
	class := cfg["connector.class"]
	switch strings.TrimSpace(cfg[RuntimeKey]) {
	case "", RuntimeGo:
		return Lookup(class)
	case RuntimeJava:
		class = strings.TrimSpace(class)
		if class == "" {
			return nil, false
		}
		for _, pr := range currentProviders() {
			if p, ok := pr.Lookup(class); ok {
				return p, true
			}
		}
	}
	return nil, false
}

// Plugins lists the built-in plugins and the providers' connectors, by
// class name; a provider's class that is also built in is left out.
func Plugins() []*Plugin {
	regMu.RLock()
	out := make([]*Plugin, 0, len(classes))
	for _, c := range classes {
		out = append(out, plugins[c])
	}
	regMu.RUnlock()
	prov := currentProviders()
	if len(prov) == 0 {
		return out
	}
	seen := map[string]bool{}
	for _, p := range out {
		seen[p.Class] = true
	}
	for _, pr := range prov {
		for _, p := range pr.Plugins() {
			if !seen[p.Class] {
				seen[p.Class] = true
				out = append(out, p)
			}
		}
	}
	slices.SortFunc(out, func(a, b *Plugin) int { return strings.Compare(a.Class, b.Class) })
	return out
}

// Provider supplies connector plugins that are not built in (the Java
// connector host's). Built-in plugins win over a provider's of the same
// name.
type Provider interface {
	// Lookup finds a connector by class name or alias; it may wait a
	// bounded time for the provider's catalogue.
	Lookup(name string) (*Plugin, bool)
	// Plugins lists the provider's connectors.
	Plugins() []*Plugin
	// OtherPlugins lists its converters, header converters,
	// transformations and predicates, for GET /connector-plugins.
	OtherPlugins() []PluginDesc
}

// PluginDesc describes a plugin that is not a connector. Type is Kafka
// Connect's name of its kind: converter, header_converter,
// transformation or predicate.
type PluginDesc struct {
	Class   string
	Type    string
	Version string
}

var (
	provMu    sync.RWMutex
	providers []*Provider
)

// RegisterProvider adds a plugin provider; the returned function removes
// it again (a node that shuts down).
func RegisterProvider(p Provider) (unregister func()) {
	pp := &p
	provMu.Lock()
	providers = append(providers, pp)
	provMu.Unlock()
	return func() {
		provMu.Lock()
		defer provMu.Unlock()
		providers = slices.DeleteFunc(providers, func(x *Provider) bool { return x == pp })
	}
}

func currentProviders() []Provider {
	provMu.RLock()
	defer provMu.RUnlock()
	out := make([]Provider, 0, len(providers))
	for _, p := range providers {
		out = append(out, *p)
	}
	return out
}

// RestartObserver is a Provider that wants to know when an operator
// restarts a connector or one of its tasks on this node (Kafka Connect's
// POST /connectors/{c}/restart and /tasks/{t}/restart).
type RestartObserver interface {
	Restarted(connector string)
}

// NotifyRestart tells the providers that observe restarts that an operator
// restarted connector (or tasks of it).
func NotifyRestart(connector string) {
	for _, p := range currentProviders() {
		if o, ok := p.(RestartObserver); ok {
			o.Restarted(connector)
		}
	}
}

// PluginConfigProvider is a Provider that describes the settings of its
// plugins that are not connectors.
type PluginConfigProvider interface {
	PluginConfig(class string) (ConfigDef, error)
}

// ProvidedPluginConfig asks the provider that lists class (by its class
// name) among its other plugins for its settings; ok is false when none
// lists it or the one that does cannot describe it.
func ProvidedPluginConfig(class string) (def ConfigDef, ok bool, err error) {
	for _, p := range currentProviders() {
		for _, d := range p.OtherPlugins() {
			if d.Class != class {
				continue
			}
			if cp, can := p.(PluginConfigProvider); can {
				def, err = cp.PluginConfig(class)
				return def, true, err
			}
			return nil, false, nil
		}
	}
	return nil, false, nil
}

// ProvidedPlugins lists the providers' plugins that are not connectors.
func ProvidedPlugins() []PluginDesc {
	var out []PluginDesc
	for _, p := range currentProviders() {
		out = append(out, p.OtherPlugins()...)
	}
	return out
}
