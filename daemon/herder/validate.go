package herder

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode/utf16"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/secrets"
)

// Config is a connector config as a request gives it: a nil value is a
// JSON null.
type Config map[string]*string

// Strings returns c without its null values.
func (c Config) Strings() map[string]string {
	out := make(map[string]string, len(c))
	for k, v := range c {
		if v != nil {
			out[k] = *v
		}
	}
	return out
}

// ConfigOf turns a stored config into a Config.
func ConfigOf(m map[string]string) Config {
	out := make(Config, len(m))
	for k, v := range m {
		out[k] = &v
	}
	return out
}

// javaMap is how Java prints a map in messages: {a=1, b=null}.
func (c Config) javaMap() string {
	parts := make([]string, 0, len(c))
	for _, k := range slices.Sorted(maps.Keys(c)) {
		v := "null"
		if c[k] != nil {
			v = *c[k]
		}
		parts = append(parts, k+"="+v)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

const nullValueError = "Null value can not be supplied as the configuration value."

// ValidateConfig answers PUT /connector-plugins/{plugin}/config/validate:
// the config checked against Kafka Connect's connector settings and the
// plugin's own, errors included. It fails only when the config names no
// connector class, names another plugin than the path, or an unknown one.
func (h *Herder) ValidateConfig(plugin string, props Config) (ConfigInfos, error) {
	class := props[keyConnectorClass]
	if class != nil && !strings.HasSuffix(trimConnector(*class), trimConnector(plugin)) {
		return ConfigInfos{}, errorf(ErrBadRequest, "Included connector type %s does not match request type %s", *class, plugin)
	}
	if class == nil {
		return ConfigInfos{}, errorf(ErrBadRequest, "Connector config %s contains no connector type", props.javaMap())
	}
	p, ok := connect.LookupConfig(props.Strings())
	if !ok {
		return ConfigInfos{}, errorf(ErrBadRequest, "%s", classNotFound(*class, props.Strings()))
	}
	return h.validate(p, *class, props), nil
}

// classNotFound says why a config's class was not found: Kafka Connect's
// message, or what its kcd.runtime (connect.RuntimeKey) asked for.
func classNotFound(class string, cfg map[string]string) string {
	switch rt := strings.TrimSpace(cfg[connect.RuntimeKey]); rt {
	case "", connect.RuntimeGo:
		return pluginNotFound(class)
	case connect.RuntimeJava:
		return fmt.Sprintf("%s=%s: the Java connector host has no connector class %s (is its plugin on --plugin-path?)", connect.RuntimeKey, rt, strings.TrimSpace(class))
	default:
		return fmt.Sprintf("%s %q is not one of %s, %s", connect.RuntimeKey, rt, connect.RuntimeGo, connect.RuntimeJava)
	}
}

func trimConnector(s string) string {
	if t, ok := strings.CutSuffix(s, "Connector"); ok && t != "" {
		return t
	}
	return s
}

// checkWrite validates a config about to be stored, as Kafka Connect does
// before it writes one, and returns what to store: the config without the
// null values of the connector's own settings (Kafka Connect stores them as
// nulls; kcd's configs are string maps).
func (h *Herder) checkWrite(props Config) (*connect.Plugin, map[string]string, []string, error) {
	class := props[keyConnectorClass]
	if class == nil {
		return nil, nil, nil, errorf(ErrBadRequest, "Connector config %s contains no connector type", props.javaMap())
	}
	p, ok := connect.LookupConfig(props.Strings())
	if !ok {
		return nil, nil, nil, errorf(ErrBadRequest, "org.apache.kafka.connect.errors.ConnectException: %s", classNotFound(*class, props.Strings()))
	}
	infos := h.validate(p, *class, props)
	if infos.ErrorCount > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "Connector configuration is invalid and contains the following %d error(s):\n", infos.ErrorCount)
		for _, c := range infos.Configs {
			for _, e := range c.Value.Errors {
				b.WriteString(e + "\n")
			}
		}
		b.WriteString("You can also find the above list of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`")
		return nil, nil, nil, errorf(ErrBadRequest, "%s", b.String())
	}
	return p, props.Strings(), props.nulls(), nil
}

// nulls are the settings of c given as null, sorted.
func (c Config) nulls() []string {
	var out []string
	for k, v := range c {
		if v == nil {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// validate checks props against Kafka Connect's settings for a connector
// of plugin p and then p's own ConfigDef, as Kafka Connect's
// AbstractHerder.validateConnectorConfig does.
func (h *Herder) validate(p *connect.Plugin, class string, props Config) ConfigInfos {
	conn := p.New()
	common := h.commonKeys(p, props, true)
	known := map[string]bool{}
	for _, k := range common {
		known[k.name] = true
	}
	var own []*key
	for _, k := range ownKeys(conn.ConfigDef()) {
		if !known[k.name] {
			known[k.name] = true
			own = append(own, k)
		}
	}
	convKeys, convProps := h.converterSettings(common, props)
	for _, k := range convKeys {
		known[k.name] = true
	}

	r := &results{props: props, byName: map[string]*ConfigValueInfo{}}
	// A null value of a setting nobody defines is an error of its own,
	// listed first.
	for _, name := range slices.Sorted(maps.Keys(props)) {
		if props[name] == nil && !known[name] {
			r.addError(name, nullValueError)
		}
	}
	for i, k := range slices.Concat(common, own, convKeys) {
		in := props
		if i >= len(common)+len(own) {
			in = convProps
		}
		r.add(k, evaluate(k, in, i < len(common)))
	}

	if want := props[keyPluginVersion]; want != nil {
		if err := checkVersion(p.Class, p.Version, *want); err != nil {
			r.addError(keyConnectorClass, err.Error())
			r.addError(keyPluginVersion, err.Error())
		}
	}
	if p.Type == connect.PluginSink {
		checkSinkTopics(props, r.addError)
	}
	h.checkClientOverrides(p.Type, props, r)
	if cv, ok := conn.(connect.ConfigValidator); ok {
		errs := cv.ValidateConfig(props.Strings())
		for _, name := range slices.Sorted(maps.Keys(errs)) {
			for _, msg := range errs[name] {
				// A Java connector's validate checks its ConfigDef again:
				// one message once.
				if v := r.byName[name]; v == nil || !slices.Contains(v.Errors, msg) {
					r.addError(name, msg)
				}
			}
		}
	}
	if fu, ok := conn.(connect.FileUser); ok && h.opts.Files != nil {
		errs := fu.ValidateFiles(h.opts.Files, props.Strings())
		for _, name := range slices.Sorted(maps.Keys(errs)) {
			for _, msg := range errs[name] {
				r.addError(name, msg)
			}
		}
	}
	return r.infos(class)
}

// results collects the settings of a validation, in order.
type results struct {
	props   Config
	configs []ConfigInfo
	byName  map[string]*ConfigValueInfo
	groups  []string
}

// add lists a defined setting, and its group.
func (r *results) add(k *key, v *ConfigValueInfo) {
	info := k.info()
	r.configs = append(r.configs, ConfigInfo{Definition: &info, Value: v})
	r.byName[v.Name] = v
	if k.group != "" && !slices.Contains(r.groups, k.group) {
		r.groups = append(r.groups, k.group)
	}
}

// addError adds an error to a setting, listing it (without a definition)
// if it is not yet.
func (r *results) addError(name, msg string) {
	v := r.byName[name]
	if v == nil {
		v = &ConfigValueInfo{Name: name, Value: r.props[name], RecommendedValues: []string{}, Errors: []string{}, Visible: true}
		r.configs = append(r.configs, ConfigInfo{Value: v})
		r.byName[name] = v
	}
	v.Errors = append(v.Errors, msg)
}

func (r *results) infos(class string) ConfigInfos {
	out := ConfigInfos{Name: class, Groups: r.groups, Configs: r.configs}
	if out.Groups == nil {
		out.Groups = []string{}
	}
	for _, c := range r.configs {
		out.ErrorCount += len(c.Value.Errors)
	}
	return out
}

// converterSettings returns the settings of the converters props names,
// prefixed ("key.converter.schemas.enable"), and props with what Kafka
// Connect adds to a converter's settings: converter.type, the converter's
// kind.
func (h *Herder) converterSettings(common []*key, props Config) ([]*key, Config) {
	if h.opts.ConverterConfig == nil {
		return nil, props
	}
	var keys []*key
	out := maps.Clone(props)
	// In Kafka Connect's order: its merge of the three answers.
	for _, kind := range []string{"header", "key", "value"} {
		prop := kind + ".converter"
		raw := props[prop]
		i := slices.IndexFunc(common, func(k *key) bool { return k.name == prop })
		if raw == nil || i < 0 {
			continue
		}
		class, ok := common[i].resolve(*raw)
		if !ok {
			continue
		}
		// Kafka Connect checks them with the converter's ConfigDef.validateAll,
		// whose answer is a HashMap: its order, the settings' own names in
		// the messages.
		for _, k := range javaHashMapOrder(ownKeys(h.opts.ConverterConfig(class)), func(k *key) string { return k.name }) {
			k.msgName = k.name
			k.name = prop + "." + k.name
			keys = append(keys, k)
		}
		if _, set := out[prop+".converter.type"]; !set {
			out[prop+".converter.type"] = &kind
		}
	}
	return keys, out
}

// evaluate parses and validates one setting, as Kafka Connect's
// ConfigDef.validate does. common says whether k is one of Kafka Connect's
// settings (a null value there is an error; for the connector's own
// settings a null is kept: no value, no default, no error, as Kafka
// Connect's ConfigDef.parseType makes it).
func evaluate(k *key, props Config, common bool) *ConfigValueInfo {
	raw, present := props[k.name]
	isNull := present && raw == nil
	ownNull := isNull && !common
	if ownNull {
		isNull = false
	}
	v := &ConfigValueInfo{Name: k.name, RecommendedValues: k.recommended, Errors: []string{}, Visible: !k.invisible}
	if v.RecommendedValues == nil {
		v.RecommendedValues = []string{}
	}
	var parsed any
	switch {
	case present && raw != nil && secrets.HasReference(*raw):
		// Resolved on the worker that runs the connector (config
		// providers), never here: the value is checked there, and shown
		// as written.
		shown := *raw
		if k.typ == connect.TypePassword {
			shown = secrets.Hidden
		}
		v.Value = &shown
		return v
	case present && raw != nil:
		var msg string
		if parsed, msg = k.parse(*raw); msg != "" {
			v.Errors = append(v.Errors, msg)
		}
	case isNull, ownNull:
	case k.required:
		v.Errors = append(v.Errors, fmt.Sprintf("Missing required configuration \"%s\" which has no default value.", k.nameInMessages()))
	case k.def != nil:
		parsed, _ = k.parse(*k.def)
	}
	if k.validate != nil && (present || !k.required || k.validateMissing) {
		if msg := k.validate(k.nameInMessages(), parsed); msg != "" {
			v.Errors = append(v.Errors, msg)
		}
	}
	if isNull {
		v.Errors = append(v.Errors, nullValueError)
	}
	if parsed != nil {
		s := render(k.typ, parsed)
		v.Value = &s
	}
	return v
}

// checkSinkTopics is SinkConnectorConfig.validate: exactly one of topics and
// topics.regex, and a dead letter queue topic that the sink does not read.
func checkSinkTopics(props Config, addError func(name, msg string)) {
	blank := func(s *string) bool { return s == nil || javaTrim(*s) == "" }
	topics, regex := props[keyTopics], props[keyTopicsRegex]
	hasTopics, hasRegex := !blank(topics), !blank(regex)
	switch {
	case hasTopics && hasRegex:
		for _, k := range []string{keyTopics, keyTopicsRegex} {
			addError(k, "topics and topics.regex are mutually exclusive options, but both are set.")
		}
	case !hasTopics && !hasRegex:
		for _, k := range []string{keyTopics, keyTopicsRegex} {
			addError(k, "Must configure one of topics or topics.regex")
		}
	}
	dlq := ""
	if d := props[keyDLQTopic]; d != nil {
		dlq = javaTrim(*d)
	}
	if dlq == "" {
		return
	}
	if hasTopics {
		var list []string
		for _, t := range strings.Split(*topics, ",") {
			if t = strings.TrimSpace(t); t != "" && !slices.Contains(list, t) {
				list = append(list, t)
			}
		}
		if slices.Contains(list, dlq) {
			addError(keyTopics, fmt.Sprintf("The DLQ topic '%s' may not be included in the list of topics ('%s=%s') consumed by the connector", dlq, keyTopics, javaString(list)))
		}
	}
	if hasRegex {
		if re, err := regexp.Compile("^(?:" + *regex + ")$"); err == nil && re.MatchString(dlq) {
			addError(keyTopicsRegex, fmt.Sprintf("The DLQ topic '%s' may not be matched by the regex for the topics ('%s=%s') consumed by the connector", dlq, keyTopicsRegex, *regex))
		}
	}
}

// javaHashMapOrder returns items in the order a java.util.HashMap holds
// them when they are put in the given order under key(item): by bucket of
// the key's String.hashCode, spread as HashMap.hash does, over the table
// the map has grown to; in a bucket, in the order put.
func javaHashMapOrder[T any](items []T, key func(T) string) []T {
	size := 16
	for len(items) > size*3/4 {
		size *= 2
	}
	bucket := func(s string) int {
		var h int32
		for _, c := range utf16.Encode([]rune(s)) {
			h = 31*h + int32(c)
		}
		u := uint32(h)
		return int((u ^ u>>16) & uint32(size-1))
	}
	out := slices.Clone(items)
	slices.SortStableFunc(out, func(a, b T) int { return cmp.Compare(bucket(key(a)), bucket(key(b))) })
	return out
}
