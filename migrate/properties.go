package migrate

import (
	"fmt"
	"io"
	"os"

	"github.com/kcd-project/kcd/internal/javaprops"
)

// maxPropertiesSize bounds a properties file: a Kafka client config is a
// few kilobytes.
const maxPropertiesSize = 1 << 20

// LoadProperties reads a Java .properties file, such as the client config a
// Kafka tool takes with --command-config, as java.util.Properties.load reads
// it: key=value, key:value or key value; # and ! comment lines; a line
// ending in an odd number of backslashes continues on the next one (whose
// leading blanks are dropped); \t \n \r \f \uXXXX escapes, any other escaped
// character stands for itself. The file is read as UTF-8 when it is valid
// UTF-8, else as ISO-8859-1 (what Properties.load assumes). A key given
// twice keeps its last value.
func LoadProperties(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("properties file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("properties file: %w", err)
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("properties file %s: is a directory", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxPropertiesSize+1))
	if err != nil {
		return nil, fmt.Errorf("properties file %s: %w", path, err)
	}
	if len(b) > maxPropertiesSize {
		return nil, fmt.Errorf("properties file %s: larger than %d bytes", path, maxPropertiesSize)
	}
	props, err := javaprops.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("properties file %s: %w", path, err)
	}
	return props, nil
}

// ParseProperties parses the text of a .properties file (see LoadProperties).
// An error names the line but never quotes a value: values may be secrets.
func ParseProperties(data []byte) (map[string]string, error) { return javaprops.Parse(data) }
