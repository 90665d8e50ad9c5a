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

// Lookup finds a plugin by class name or alias.
func Lookup(name string) (*Plugin, bool) {
	regMu.RLock()
	defer regMu.RUnlock()
	p, ok := plugins[strings.TrimSpace(name)]
	return p, ok
}

// Plugins lists the registered plugins by class name.
func Plugins() []*Plugin {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]*Plugin, 0, len(classes))
	for _, c := range classes {
		out = append(out, plugins[c])
	}
	return out
}
