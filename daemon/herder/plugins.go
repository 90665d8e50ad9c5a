package herder

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connect/transforms"
)

// Plugins lists the installed plugins, connectors first, each kind sorted
// by class, as GET /connector-plugins does. With connectorsOnly false it
// adds transformations, predicates, converters and header converters.
func (h *Herder) Plugins(connectorsOnly bool) []PluginInfo {
	var out []PluginInfo
	for _, p := range connect.Plugins() {
		out = append(out, PluginInfo{Class: p.Class, Type: PluginType(p.Type), Version: p.Version})
	}
	if connectorsOnly {
		return out
	}
	provided := connect.ProvidedPlugins()
	for _, kind := range []struct {
		typ     PluginType
		classes []string
	}{
		{PluginTransformation, h.opts.Transformations},
		{PluginPredicate, h.opts.Predicates},
		{PluginConverter, h.opts.Converters},
		{PluginHeaderConverter, h.opts.HeaderConverters},
	} {
		var kindOut []PluginInfo
		seen := map[string]bool{}
		for _, c := range sorted(kind.classes) {
			seen[c] = true
			v := h.opts.PluginVersion
			if _, ok := transforms.Lookup(c); ok {
				v = transforms.Version
			}
			kindOut = append(kindOut, PluginInfo{Class: c, Type: kind.typ, Version: v})
		}
		// The Java host's, where kcd has no class of that name.
		for _, d := range provided {
			if PluginType(d.Type) == kind.typ && !seen[d.Class] {
				seen[d.Class] = true
				kindOut = append(kindOut, PluginInfo{Class: d.Class, Type: kind.typ, Version: d.Version})
			}
		}
		slices.SortFunc(kindOut, func(a, b PluginInfo) int { return strings.Compare(a.Class, b.Class) })
		out = append(out, kindOut...)
	}
	return out
}

// PluginConfig returns the settings of a plugin (GET
// /connector-plugins/{plugin}/config): for a connector its own ConfigDef,
// then Kafka Connect's common connector settings; for a converter or
// header converter its settings (Options.ConverterConfig). Transformations
// and predicates describe no settings yet. version, when not empty, must
// match the plugin's version (a version or a Maven-style range, as in
// Kafka Connect 4.1+).
func (h *Herder) PluginConfig(name, version string) ([]ConfigKeyInfo, error) {
	if p, ok := connect.Lookup(name); ok {
		if err := checkVersion(p.Class, p.Version, version); err != nil {
			return nil, err
		}
		defs := ownKeys(p.New().ConfigDef())
		defs = append(defs, h.commonKeys(p, nil, false)...)
		out := make([]ConfigKeyInfo, 0, len(defs))
		for _, k := range defs {
			out = append(out, k.info())
		}
		return out, nil
	}
	for i, classes := range [][]string{h.opts.Converters, h.opts.HeaderConverters, h.opts.Transformations, h.opts.Predicates} {
		suffix := ""
		if i < 2 {
			suffix = "Converter" // IntegerConverter is "Integer" too
		}
		if class, ok := resolveClass(classes, name, suffix); ok {
			if tp, ok := transforms.Lookup(class); ok && tp.Class == class {
				if err := checkVersion(class, transforms.Version, version); err != nil {
					return nil, err
				}
				// The plugin's own ConfigDef: no group, no order (-1).
				out := []ConfigKeyInfo{}
				for _, k := range ownKeys(tp.Config) {
					k.order = -1
					out = append(out, k.info())
				}
				return out, nil
			}
			if err := checkVersion(class, h.opts.PluginVersion, version); err != nil {
				return nil, err
			}
			out := []ConfigKeyInfo{}
			if i < 2 && h.opts.ConverterConfig != nil {
				for _, k := range ownKeys(h.opts.ConverterConfig(class)) {
					out = append(out, k.info())
				}
			}
			return out, nil
		}
	}
	for _, d := range connect.ProvidedPlugins() {
		if class, ok := resolveClass([]string{d.Class}, name, ""); ok {
			if err := checkVersion(class, d.Version, version); err != nil {
				return nil, err
			}
			def, ok, err := connect.ProvidedPluginConfig(class)
			if err != nil {
				return nil, fmt.Errorf("describe the settings of %s: %w", class, err) // 500, as a failing plugin is there
			}
			out := []ConfigKeyInfo{}
			if ok {
				for _, k := range ownKeys(def) {
					out = append(out, k.info())
				}
			}
			return out, nil
		}
	}
	return nil, errorf(ErrNotFound, "Unknown plugin %s.", name)
}

func checkVersion(class, have, want string) error {
	if want == "" {
		return nil
	}
	rng, ok := versionInRange(have, want)
	if ok {
		return nil
	}
	return errorf(ErrBadRequest, "Plugin %s not found that matches the version range %s, available versions: [%s]", class, rng, have)
}

// lookupConnector finds a connector plugin by class name or alias.
func lookupConnector(class string) (*connect.Plugin, error) {
	if p, ok := connect.Lookup(class); ok {
		return p, nil
	}
	return nil, errorf(ErrBadRequest, "%s", pluginNotFound(class))
}

// pluginNotFound is Kafka Connect's message for an unknown connector class,
// with kcd's plugins described as Java's PluginDesc prints them.
func pluginNotFound(class string) string {
	var descs []string
	for _, p := range connect.Plugins() {
		descs = append(descs, fmt.Sprintf("PluginDesc{klass=class %s, name='%s', version='%s', encodedVersion=%s, type=%s, typeName='%s', location='classpath'}",
			p.Class, p.Class, p.Version, p.Version, p.Type, p.Type))
	}
	return fmt.Sprintf("Failed to find any class that implements Connector and which name matches %s, available connectors are: %s",
		strings.TrimSpace(class), strings.Join(descs, ", "))
}

// connectorTypeOf returns the type of a connector class (unknown when it is
// not installed).
func connectorTypeOf(class string) ConnectorType {
	p, ok := connect.Lookup(class)
	if !ok {
		return TypeUnknown
	}
	return ConnectorType(p.Type)
}

// resolveClass finds name among classes, by class name, simple name, or
// simple name without suffix (as Kafka Connect's aliases work).
func resolveClass(classes []string, name, suffix string) (string, bool) {
	name = strings.TrimSpace(name)
	for _, c := range classes {
		simple := c[strings.LastIndexByte(c, '.')+1:]
		if name == c || name == simple {
			return c, true
		}
		if s, ok := strings.CutSuffix(simple, suffix); suffix != "" && ok && s != "" && name == s {
			return c, true
		}
	}
	return "", false
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}
