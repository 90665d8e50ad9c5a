// Package file is Kafka Connect's FileStream connectors in Go, under their
// Java class names so that imported configs run unchanged:
//
//   - org.apache.kafka.connect.file.FileStreamSourceConnector reads the
//     lines of a file (stdin when file is empty) into a topic. Its source
//     partition is {"filename": file} and its offset {"position": n}, n
//     counted as the Java task counts it: in UTF-16 chars, up to just after
//     the line terminator (\n, \r or \r\n). A restart resumes after n such
//     chars. (The Java task skips n bytes on restart instead, which is the
//     same place for ASCII files and a few lines earlier otherwise.)
//   - org.apache.kafka.connect.file.FileStreamSinkConnector appends each
//     record's value, rendered as Java's toString would, and a newline to a
//     file (stdout when file is empty).
//
// Under a confinement (connect.Files, kcd's --file-connector-dirs) file
// must name a file inside the allowed directories, and stdin and stdout
// are refused: a daemon's standard streams are of no use to anyone, and
// an empty file must not be a way around the confinement. Validation
// refuses other paths (ValidateFiles); connectors and tasks check again
// when they start, and open the file through the confinement.
package file

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/internal/version"
)

// The class names and settings, as in Kafka Connect.
const (
	SourceClass = "org.apache.kafka.connect.file.FileStreamSourceConnector"
	SinkClass   = "org.apache.kafka.connect.file.FileStreamSinkConnector"

	FileConfig      = "file"
	TopicConfig     = "topic"
	BatchSizeConfig = "batch.size"

	// DefaultBatchSize is the most lines one Poll returns.
	DefaultBatchSize = 2000

	// Source partition and offset fields.
	FilenameField = "filename"
	PositionField = "position"
)

func init() {
	connect.Register(connect.Plugin{
		Class:   SourceClass,
		Type:    connect.PluginSource,
		Version: version.Version,
		New:     func() connect.Connector { return &SourceConnector{} },
	})
	connect.Register(connect.Plugin{
		Class:   SinkClass,
		Type:    connect.PluginSink,
		Version: version.Version,
		New:     func() connect.Connector { return &SinkConnector{} },
	})
}

func nonEmpty(v string) error {
	if strings.TrimSpace(v) == "" {
		return errors.New("String must be non-empty")
	}
	return nil
}

var sourceConfigDef = connect.ConfigDef{
	{Name: FileConfig, Type: connect.TypeString, NullDefault: true, Importance: connect.High,
		Documentation: "Source filename. If not specified, the standard input will be used"},
	{Name: TopicConfig, Type: connect.TypeString, Importance: connect.High, Validator: nonEmpty,
		Documentation: "The topic to publish data to"},
	{Name: BatchSizeConfig, Type: connect.TypeInt, Default: connect.Default(strconv.Itoa(DefaultBatchSize)), Importance: connect.Low,
		Documentation: "The maximum number of records the source task can read from the file each time it is polled",
		Validator: func(v string) error {
			if n, _ := strconv.Atoi(strings.TrimSpace(v)); n < 1 {
				return errors.New("Value must be at least 1")
			}
			return nil
		}},
}

var sinkConfigDef = connect.ConfigDef{
	{Name: FileConfig, Type: connect.TypeString, NullDefault: true, Importance: connect.High,
		Documentation: "Destination filename. If not specified, the standard output will be used"},
}

// validate checks a config against def, as the runtime's validation would,
// for a connector started without it.
func validate(def connect.ConfigDef, cfg map[string]string) error {
	var errs []error
	for _, k := range def {
		var v *string
		if s, ok := cfg[k.Name]; ok {
			v = &s
		}
		if err := k.ValidateValue(v); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// checkFile checks the file setting against files: under a confinement,
// file must name an allowed file (not stdin or stdout).
func checkFile(files *connect.Files, cfg map[string]string) error {
	if files == nil {
		return nil
	}
	name := cfg[FileConfig]
	if name == "" {
		return fmt.Errorf("Invalid value  for configuration %s: FileStream connectors may not use standard input or output while files are confined to %s (file-connector-dirs); name a file there", FileConfig, files)
	}
	if err := files.Check(name); err != nil {
		return fmt.Errorf("Invalid value %s for configuration %s: %v", name, FileConfig, err)
	}
	return nil
}

// validateFiles is connect.FileUser's ValidateFiles of both connectors.
func validateFiles(files *connect.Files, cfg map[string]string) map[string][]string {
	if err := checkFile(files, cfg); err != nil {
		return map[string][]string{FileConfig: {err.Error()}}
	}
	return nil
}
