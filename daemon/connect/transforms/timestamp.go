package transforms

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connect/data"
)

func init() {
	registerKV(pkg+"TimestampConverter", timestampConverterDef, func(k bool) Transformation { return &timestampConverter{side: side(k)} })
	register(Plugin{Class: pkg + "TimestampRouter", Config: timestampRouterDef, NewTransformation: func() Transformation { return &timestampRouter{} }})
}

const (
	tsString    = "string"
	tsUnix      = "unix"
	tsDate      = "Date"
	tsTime      = "Time"
	tsTimestamp = "Timestamp"
)

var timestampConverterDef = connect.ConfigDef{
	{Name: "field", Type: connect.TypeString, Default: def(""), Importance: connect.High, Documentation: "The field containing the timestamp, or empty if the entire value is a timestamp"},
	{Name: "target.type", Type: connect.TypeString, Importance: connect.High,
		Documentation: "The desired timestamp representation: string, unix, Date, Time, or Timestamp", Validator: oneOf(tsString, tsUnix, tsDate, tsTime, tsTimestamp),
		NullMessage: "Invalid value null for configuration {name}: String must be one of: string, unix, Date, Time, Timestamp"},
	{Name: "format", Type: connect.TypeString, Default: def(""), Importance: connect.Medium,
		Documentation: "A SimpleDateFormat-compatible format for the timestamp. Used to generate the output when type=string or used to parse the input if the input is a string.",
		Validator:     validDateFormat},
	{Name: "unix.precision", Type: connect.TypeString, Default: def("milliseconds"), Importance: connect.Low,
		Documentation: "The desired Unix precision for the timestamp: seconds, milliseconds, microseconds, or nanoseconds. Used to generate the output when type=unix or used to parse the input if the input is a Long.Note: This SMT will cause precision loss during conversions from, and to, values with sub-millisecond components.",
		Validator:     oneOf("nanoseconds", "microseconds", "milliseconds", "seconds")},
	replaceNullKey,
}

func validDateFormat(v string) error {
	_, err := newDateFormat(v)
	return err
}

type timestampConverter struct {
	side
	field       string
	target      string
	format      *dateFormat
	precision   string
	replaceNull bool
}

func (t *timestampConverter) Configure(raw map[string]string) error {
	c, err := parseConfig(timestampConverterDef, raw)
	if err != nil {
		return err
	}
	t.field, t.target, t.precision = c.string("field"), c.string("target.type"), c.string("unix.precision")
	t.replaceNull = c.bool("replace.null.with.default")
	f := c.string("format")
	if t.target == tsString && strings.TrimSpace(f) == "" {
		return configErrorf("TimestampConverter requires format option to be specified when using string timestamps")
	}
	if f != "" {
		if t.format, err = newDateFormat(f); err != nil {
			return configErrorf("TimestampConverter requires a SimpleDateFormat-compatible pattern for string timestamps: %s", f)
		}
	}
	return nil
}

func (t *timestampConverter) targetSchema(optional bool) *data.Schema {
	switch t.target {
	case tsString:
		return optionalCopy(data.StringSchema, optional)
	case tsUnix:
		return optionalCopy(data.Int64Schema, optional)
	case tsDate:
		return data.DateSchema(optional)
	case tsTime:
		return data.TimeSchema(optional)
	}
	return data.TimestampSchema(optional)
}

func typeOfSchema(s *data.Schema) (string, error) {
	switch {
	case s.Name == data.TimestampName:
		return tsTimestamp, nil
	case s.Name == data.DateName:
		return tsDate, nil
	case s.Name == data.TimeName:
		return tsTime, nil
	case s.Type == data.String:
		return tsString, nil
	case s.Type == data.Int64:
		return tsUnix, nil
	}
	return "", fmt.Errorf("Schema %s does not correspond to a known timestamp type format", s)
}

func (t *timestampConverter) Apply(r *Record) (*Record, error) {
	v, schema := t.value(r), t.schema(r)
	if schema == nil {
		if v == nil || t.field == "" {
			cv, err := t.convert(v, "")
			if err != nil {
				return nil, err
			}
			return t.with(r, nil, cv), nil
		}
		m, err := requireMap(v, "converting timestamp formats")
		if err != nil {
			return nil, err
		}
		cv, err := t.convert(m.get(t.field), "")
		if err != nil {
			return nil, err
		}
		m.put(t.field, cv)
		return t.with(r, nil, m.value()), nil
	}
	if t.field == "" {
		from, err := typeOfSchema(schema)
		if err != nil {
			return nil, err
		}
		cv, err := t.convert(v, from)
		if err != nil {
			return nil, err
		}
		return t.with(r, t.targetSchema(schema.Optional), cv), nil
	}
	st, err := requireStructOrNull(v, "converting timestamp formats")
	if err != nil {
		return nil, err
	}
	ns := copySchemaBasics(schema, structSchema())
	for _, f := range schema.Fields {
		if f.Name == t.field {
			addField(ns, f.Name, t.targetSchema(f.Schema.Optional))
		} else {
			addField(ns, f.Name, f.Schema)
		}
	}
	ns.Optional = schema.Optional
	if d, ok := schema.Default.(*data.Struct); ok && d != nil {
		if ns.Default, err = t.convertStruct(d, ns); err != nil {
			return nil, err
		}
	}
	out, err := t.convertStruct(st, ns)
	if err != nil {
		return nil, err
	}
	if out == nil {
		return t.with(r, ns, nil), nil
	}
	return t.with(r, ns, out), nil
}

func (t *timestampConverter) convertStruct(st *data.Struct, ns *data.Schema) (*data.Struct, error) {
	if st == nil {
		return nil, nil
	}
	out := data.NewStruct(ns)
	for i := range st.Schema.Fields {
		f := &st.Schema.Fields[i]
		fv := fieldValue(st, f, t.replaceNull)
		if f.Name == t.field {
			from, err := typeOfSchema(f.Schema)
			if err != nil {
				return nil, err
			}
			if fv, err = t.convert(fv, from); err != nil {
				return nil, err
			}
		}
		if err := put(out, f.Name, fv); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// convert is convertTimestamp: from the source type (inferred when "")
// to an instant, then to the target type.
func (t *timestampConverter) convert(v any, from string) (any, error) {
	if v == nil {
		return nil, nil
	}
	if from == "" {
		switch v.(type) {
		case time.Time:
			from = tsTimestamp
		case int64:
			from = tsUnix
		case string:
			from = tsString
		default:
			return nil, data.Errorf("TimestampConverter does not support %s objects as timestamps", javaClass(v))
		}
	}
	var ms int64
	switch from {
	case tsString:
		s, ok := v.(string)
		if !ok {
			return nil, data.Errorf("Expected string timestamp to be a String, but found %s", javaClass(v))
		}
		if t.format == nil {
			return nil, data.Errorf("TimestampConverter requires format option to be specified when using string timestamps")
		}
		p, err := t.format.parse(s)
		if err != nil {
			return nil, data.Errorf("Could not parse timestamp: value (%s) does not match pattern (%s)", s, t.format.pattern)
		}
		ms = p
	case tsUnix:
		n, ok := v.(int64)
		if !ok {
			return nil, data.Errorf("Expected Unix timestamp to be a Long, but found %s", javaClass(v))
		}
		switch t.precision {
		case "seconds":
			ms = n * 1000
		case "microseconds":
			ms = n / 1000
		case "nanoseconds":
			ms = n / 1000000
		default:
			ms = n
		}
	default:
		tm, ok := v.(time.Time)
		if !ok {
			return nil, data.Errorf("Expected %s to be a java.util.Date, but found %s", from, javaClass(v))
		}
		ms = tm.UnixMilli()
	}
	const day = 24 * 60 * 60 * 1000
	switch t.target {
	case tsString:
		return t.format.format(ms), nil
	case tsUnix:
		switch t.precision {
		case "seconds":
			return ms / 1000, nil
		case "microseconds":
			return ms * 1000, nil
		case "nanoseconds":
			return ms * 1000000, nil
		}
		return ms, nil
	case tsDate:
		return time.UnixMilli(floorDiv(ms, day) * day).UTC(), nil
	case tsTime:
		return time.UnixMilli(ms - floorDiv(ms, day)*day).UTC(), nil
	}
	return time.UnixMilli(ms).UTC(), nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// TimestampRouter.

var timestampRouterDef = connect.ConfigDef{
	{Name: "topic.format", Type: connect.TypeString, Default: def("${topic}-${timestamp}"), Importance: connect.High,
		Documentation: "Format string which can contain <code>${topic}</code> and <code>${timestamp}</code> as placeholders for the topic and timestamp, respectively."},
	{Name: "timestamp.format", Type: connect.TypeString, Default: def("yyyyMMdd"), Importance: connect.High,
		Documentation: "Format string for the timestamp that is compatible with <code>java.text.SimpleDateFormat</code>.",
		Validator:     validDateFormat},
}

type timestampRouter struct {
	topicFormat string
	format      *dateFormat
}

func (t *timestampRouter) Configure(raw map[string]string) error {
	c, err := parseConfig(timestampRouterDef, raw)
	if err != nil {
		return err
	}
	t.topicFormat = c.string("topic.format")
	if t.format, err = newDateFormat(c.string("timestamp.format")); err != nil {
		return configErrorf("Invalid value %s for configuration timestamp.format: %v", c.string("timestamp.format"), err)
	}
	return nil
}

func (t *timestampRouter) Apply(r *Record) (*Record, error) {
	if r.Timestamp == nil {
		return nil, data.Errorf("Timestamp missing on record: %s", recordString(r))
	}
	topic := strings.ReplaceAll(t.topicFormat, "${topic}", r.Topic)
	topic = strings.ReplaceAll(topic, "${timestamp}", t.format.format(*r.Timestamp))
	out := r.clone()
	out.Topic = topic
	return out, nil
}

func recordString(r *Record) string {
	p := "null"
	if r.Partition != nil {
		p = strconv.Itoa(int(*r.Partition))
	}
	return fmt.Sprintf("record{topic='%s', kafkaPartition=%s}", r.Topic, p)
}

// dateFormat is the part of java.text.SimpleDateFormat kcd supports, in
// UTC: the letters y M d H h m s S a E, literal text in quotes, and the
// zone letters Z X (always +0000 / Z).
type dateFormat struct {
	pattern string
	parts   []dfPart
}

type dfPart struct {
	letter byte // 0: literal
	n      int
	lit    string
}

func newDateFormat(p string) (*dateFormat, error) {
	f := &dateFormat{pattern: p}
	for i := 0; i < len(p); {
		c := p[i]
		switch {
		case c == '\'':
			j := i + 1
			var lit strings.Builder
			for ; j < len(p); j++ {
				if p[j] == '\'' {
					if j+1 < len(p) && p[j+1] == '\'' {
						lit.WriteByte('\'')
						j++
						continue
					}
					break
				}
				lit.WriteByte(p[j])
			}
			if j == i+1 {
				lit.WriteByte('\'')
			}
			if j >= len(p) && (j == i+1 || p[len(p)-1] != '\'') {
				return nil, fmt.Errorf("Unterminated quote")
			}
			f.parts = append(f.parts, dfPart{lit: lit.String()})
			i = j + 1
		case (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'):
			j := i
			for j < len(p) && p[j] == c {
				j++
			}
			if !strings.ContainsRune("yMdHhmsSaEZX", rune(c)) {
				return nil, fmt.Errorf("Illegal pattern character '%c'", c)
			}
			f.parts = append(f.parts, dfPart{letter: c, n: j - i})
			i = j
		default:
			f.parts = append(f.parts, dfPart{lit: string(c)})
			i++
		}
	}
	return f, nil
}

func pad(n, width int) string {
	s := strconv.Itoa(n)
	for len(s) < width {
		s = "0" + s
	}
	return s
}

func (f *dateFormat) format(ms int64) string {
	t := time.UnixMilli(ms).UTC()
	var b strings.Builder
	for _, p := range f.parts {
		switch p.letter {
		case 0:
			b.WriteString(p.lit)
		case 'y':
			if p.n == 2 {
				b.WriteString(pad(t.Year()%100, 2))
			} else {
				b.WriteString(pad(t.Year(), p.n))
			}
		case 'M':
			switch {
			case p.n >= 4:
				b.WriteString(t.Month().String())
			case p.n == 3:
				b.WriteString(t.Month().String()[:3])
			default:
				b.WriteString(pad(int(t.Month()), p.n))
			}
		case 'd':
			b.WriteString(pad(t.Day(), p.n))
		case 'H':
			b.WriteString(pad(t.Hour(), p.n))
		case 'h':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			b.WriteString(pad(h, p.n))
		case 'm':
			b.WriteString(pad(t.Minute(), p.n))
		case 's':
			b.WriteString(pad(t.Second(), p.n))
		case 'S':
			b.WriteString(pad(t.Nanosecond()/1e6, p.n))
		case 'a':
			if t.Hour() < 12 {
				b.WriteString("AM")
			} else {
				b.WriteString("PM")
			}
		case 'E':
			if p.n >= 4 {
				b.WriteString(t.Weekday().String())
			} else {
				b.WriteString(t.Weekday().String()[:3])
			}
		case 'Z':
			b.WriteString("+0000")
		case 'X':
			b.WriteString("Z")
		}
	}
	return b.String()
}

// parse reads s by the pattern, leniently as SimpleDateFormat does for
// numbers (any count of digits where the next part is not a number).
func (f *dateFormat) parse(s string) (int64, error) {
	year, month, day, hour, minute, sec, milli := 1970, 1, 1, 0, 0, 0, 0
	pm, hasAmPm, h12 := false, false, -1
	i := 0
	bad := fmt.Errorf("Unparseable date: \"%s\"", s)
	for k, p := range f.parts {
		if p.letter == 0 {
			if !strings.HasPrefix(s[i:], p.lit) {
				return 0, bad
			}
			i += len(p.lit)
			continue
		}
		switch p.letter {
		case 'a':
			switch {
			case strings.HasPrefix(strings.ToUpper(s[i:]), "AM"):
			case strings.HasPrefix(strings.ToUpper(s[i:]), "PM"):
				pm = true
			default:
				return 0, bad
			}
			hasAmPm = true
			i += 2
			continue
		case 'E':
			j := i
			for j < len(s) && ((s[j] >= 'a' && s[j] <= 'z') || (s[j] >= 'A' && s[j] <= 'Z')) {
				j++
			}
			i = j
			continue
		case 'Z', 'X':
			switch {
			case strings.HasPrefix(s[i:], "Z"):
				i++
			case strings.HasPrefix(s[i:], "+0000"), strings.HasPrefix(s[i:], "-0000"):
				i += 5
			case strings.HasPrefix(s[i:], "+00:00"), strings.HasPrefix(s[i:], "-00:00"):
				i += 6
			default:
				return 0, bad
			}
			continue
		}
		if p.letter == 'M' && p.n >= 3 {
			found := false
			for m := time.January; m <= time.December; m++ {
				name := m.String()
				if p.n == 3 {
					name = name[:3]
				}
				if strings.HasPrefix(strings.ToLower(s[i:]), strings.ToLower(name)) {
					month, i, found = int(m), i+len(name), true
					break
				}
			}
			if !found {
				return 0, bad
			}
			continue
		}
		j := i
		if j < len(s) && (s[j] == '-' || s[j] == '+') && p.letter == 'y' {
			j++
		}
		limit := len(s)
		if k+1 < len(f.parts) && f.parts[k+1].letter != 0 {
			limit = min(len(s), i+p.n) // adjacent numbers: fixed widths
		}
		for j < limit && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		n, err := strconv.Atoi(s[i:j])
		if err != nil {
			return 0, bad
		}
		i = j
		switch p.letter {
		case 'y':
			year = n
			if p.n <= 2 && j-i <= 2 {
				year = 2000 + n
			}
		case 'M':
			month = n
		case 'd':
			day = n
		case 'H':
			hour = n
		case 'h':
			h12 = n
		case 'm':
			minute = n
		case 's':
			sec = n
		case 'S':
			milli = n
		}
	}
	if h12 >= 0 {
		hour = h12 % 12
	}
	if hasAmPm && pm {
		hour += 12
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, 0, time.UTC)
	return t.UnixMilli() + int64(milli), nil
}
