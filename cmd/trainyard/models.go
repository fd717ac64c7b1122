package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/trainyard/trainyard/engine"
	"github.com/trainyard/trainyard/engine/catalog"
	"github.com/trainyard/trainyard/internal/config"
)

// runModels is `trainyard models list`: the base models this configuration
// knows — snapshots of the models directory, TRAINYARD_BASE_MODELS'
// directories and the built-in models — with their architecture, size,
// dtype, context length and the memory their weights take once loaded. It
// reads only the snapshots' small files and safetensors headers; snapshots
// the engine cannot load are listed on stderr with the file and field at
// fault.
func runModels(_ context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "list" {
		return usageError{"usage: trainyard models list [-models-dir DIR]"}
	}
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	fs := flag.NewFlagSet("trainyard models list", flag.ContinueOnError)
	fs.StringVar(&cfg.ModelsDir, "models-dir", cfg.ModelsDirPath(), "directory of Hugging Face snapshots ("+config.EnvModelsDir+")")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("trainyard models list: unexpected arguments %q", fs.Args())}
	}
	c := catalog.New(cfg.BaseModelDirs)
	skipped, err := c.Scan(cfg.ModelsDirPath())
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tARCHITECTURE\tPARAMETERS\tDTYPE\tCONTEXT\tWEIGHTS IN MEMORY\tRL STEP 32x128\tSOURCE")
	for _, name := range c.Names() {
		info, ok := c.Info(name)
		source := c.Dir(name)
		if !ok {
			var err error
			if source != "" {
				info, err = engine.InspectSnapshot(source)
			} else {
				info, err = builtinInfo(name)
				source = "built in"
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
				continue
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", name, info.Architecture, humanCount(info.Params),
			info.DType, info.ContextLength, engine.FormatBytes(info.Memory.Weights), engine.FormatBytes(info.Memory.Total()), source)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range skipped {
		fmt.Fprintf(os.Stderr, "skipped %s: %v\n", s.Name, s.Err)
	}
	return nil
}

// builtinInfo describes a built-in model (embedded and small, so opening it
// is cheap).
func builtinInfo(name string) (engine.SnapshotInfo, error) {
	b, err := engine.OpenBuiltin(name)
	if err != nil {
		return engine.SnapshotInfo{}, err
	}
	est, err := b.EstimateStepMemory(engine.ReferenceStep())
	if err != nil {
		return engine.SnapshotInfo{}, err
	}
	return engine.SnapshotInfo{Architecture: "llama", Params: b.NumParams(), DType: "F32",
		ContextLength: b.ContextLength(), VocabSize: b.VocabSize(), Memory: est}, nil
}

func humanCount(n int) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2fB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1fK", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}
