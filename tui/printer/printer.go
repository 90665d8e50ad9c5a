// Package printer writes kcctl's output in the format the user picked with
// -o: a table for people, wide for more columns, json and yaml for programs,
// name for scripts.
package printer

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"go.yaml.in/yaml/v3"
)

// Formats are the values -o accepts.
var Formats = []string{"table", "wide", "json", "yaml", "name"}

// Table is what a command prints in table and wide form.
type Table struct {
	Header []string
	Rows   [][]string
	// Wide are extra columns shown with -o wide, one slice per row.
	WideHeader []string
	WideRows   [][]string
}

// Printable is an object kcctl prints: its data for json and yaml, its table
// and its names.
type Printable struct {
	Data  any
	Table Table
	Names []string
}

// ValidateFormat reports whether f is a format -o accepts.
func ValidateFormat(f string) error {
	for _, ok := range Formats {
		if f == ok {
			return nil
		}
	}
	return fmt.Errorf("unknown output format %q: use one of %s", f, strings.Join(Formats, ", "))
}

// Print writes p to w in format f.
func Print(w io.Writer, f string, p Printable) error {
	switch f {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(p.Data)
	case "yaml":
		// Go through JSON so that yaml uses the same field names as json.
		raw, err := json.Marshal(p.Data)
		if err != nil {
			return err
		}
		var generic any
		if err := yaml.Unmarshal(raw, &generic); err != nil {
			return err
		}
		enc := yaml.NewEncoder(w)
		enc.SetIndent(2)
		if err := enc.Encode(generic); err != nil {
			return err
		}
		return enc.Close()
	case "name":
		for _, n := range p.Names {
			if _, err := fmt.Fprintln(w, n); err != nil {
				return err
			}
		}
		return nil
	case "table", "wide":
		return writeTable(w, p.Table, f == "wide")
	}
	return ValidateFormat(f)
}

func writeTable(w io.Writer, t Table, wide bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	header := t.Header
	if wide {
		header = append(append([]string{}, header...), t.WideHeader...)
	}
	if len(header) > 0 {
		fmt.Fprintln(tw, strings.Join(header, "\t"))
	}
	for i, row := range t.Rows {
		cells := row
		if wide && i < len(t.WideRows) {
			cells = append(append([]string{}, row...), t.WideRows[i]...)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}
