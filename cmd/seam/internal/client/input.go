package client

import (
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/seamdata/seam/cmd/seam/internal/exit"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// ReadInput reads a file, or standard input for "-".
func ReadInput(cmd *cobra.Command, path string) ([]byte, error) {
	if path == "" {
		return nil, exit.Usagef("give the file with -f (or -f - for standard input)")
	}
	if path == "-" {
		return io.ReadAll(cmd.InOrStdin())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, exit.Usagef("%w", err)
	}
	return data, nil
}

// FileFormat picks a data file's format from --format, or else from its
// extension (.ndjson, .jsonl, .csv, .json).
func FileFormat(path, flag string) (recordv1.Format, error) {
	name := strings.ToLower(flag)
	if name == "" {
		name = strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	}
	switch name {
	case "ndjson", "jsonl":
		return recordv1.Format_FORMAT_NDJSON, nil
	case "csv":
		return recordv1.Format_FORMAT_CSV, nil
	case "json":
		return recordv1.Format_FORMAT_JSON, nil
	}
	if flag == "" {
		return 0, exit.Usagef("cannot tell the format of %s from its extension; pass --format ndjson, csv or json", path)
	}
	return 0, exit.Usagef("--format %q: use ndjson, csv or json", flag)
}
