package watch

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/bystander-kit/bystander/internal/culprit"
	"github.com/bystander-kit/bystander/internal/files"
	"github.com/bystander-kit/bystander/internal/results"
)

// Schema names the format of a watch's file in a run directory.
const Schema = "bystander.watch/v1"

// File is what watching one server found, as a run directory keeps it.
type File struct {
	Schema  string          `json:"schema"`
	Server  string          `json:"server"`
	Service culprit.Service `json:"service"`
}

// Write writes what watching server found to rel in run directory dir,
// whole or not at all.
func Write(dir, rel, server string, s culprit.Service) error {
	b, err := json.Marshal(File{Schema: Schema, Server: server, Service: s.Clean()})
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	return files.WriteAtomic(filepath.Join(dir, rel), b, 0o644)
}

// ReadIn reads the watch's file rel names in run directory dir, confined,
// capped and strict, refuses other schema versions, and caps what it says
// (a run directory is a stranger's input).
func ReadIn(dir, rel string) (*File, error) {
	var f File
	if err := results.ReadIn(dir, rel, results.MaxFileBytes, &f); err != nil {
		return nil, err
	}
	if f.Schema != Schema {
		return nil, fmt.Errorf("watch: %s: schema %q, this program reads %q", rel, f.Schema, Schema)
	}
	f.Server = cut(f.Server)
	f.Service = f.Service.Clean()
	return &f, nil
}
