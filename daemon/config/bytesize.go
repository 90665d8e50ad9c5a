package config

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ByteSize is a number of bytes, written as a plain number or with a
// binary unit: 512KiB, 80MiB, 2GiB (KB, MB and GB mean the same here, as
// they do in GOMEMLIMIT's B, KiB, MiB, GiB, TiB).
type ByteSize int64

var byteUnits = []struct {
	suffix string
	shift  uint
}{
	{"TIB", 40}, {"GIB", 30}, {"MIB", 20}, {"KIB", 10},
	{"TB", 40}, {"GB", 30}, {"MB", 20}, {"KB", 10},
	{"T", 40}, {"G", 30}, {"M", 20}, {"K", 10}, {"B", 0},
}

// ParseByteSize reads a ByteSize.
func ParseByteSize(v string) (ByteSize, error) {
	s := strings.ToUpper(strings.TrimSpace(v))
	shift := uint(0)
	for _, u := range byteUnits {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			s, shift = strings.TrimSpace(num), u.shift
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || (shift > 0 && n > (1<<62)>>shift) {
		return 0, fmt.Errorf("%q is not a size such as 80MiB", v)
	}
	return ByteSize(n << shift), nil
}

// String writes b in the largest binary unit that divides it.
func (b ByteSize) String() string {
	for _, u := range []struct {
		name  string
		shift uint
	}{{"GiB", 30}, {"MiB", 20}, {"KiB", 10}} {
		if b != 0 && b%(1<<u.shift) == 0 {
			return strconv.FormatInt(int64(b>>u.shift), 10) + u.name
		}
	}
	return strconv.FormatInt(int64(b), 10)
}

// UnmarshalYAML reads a size from the YAML file: 80MiB or a plain number.
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseByteSize(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*b = v
	return nil
}
