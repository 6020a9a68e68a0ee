package functions_test

import (
	"debug/elf"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// copyTree copies the project at src into dst as sam build's CopySourceAction
// does with CodeUri ./, leaving out what is not source: the git directory,
// build outputs and the local stack's run files.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	skip := map[string]bool{".git": true, "bin": true, ".aws-sam": true, filepath.Join("local", ".run"): true}
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if skip[rel] {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil // a worktree's .git is a file
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, info.Mode().Perm())
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// sam build runs each function's build-<LogicalId> target of the Makefile
// (BuildMethod: makefile) in a scratch copy of CodeUri, with ARTIFACTS_DIR
// set to the function's build directory, and deploys what it leaves there
// (aws-lambda-builders' custom_make workflow). Each target, run that way,
// leaves a bootstrap that provided.al2023 on arm64 runs: a static
// linux/arm64 ELF executable.
func TestSAMBuildMakesALinuxArm64BootstrapPerFunction(t *testing.T) {
	if testing.Short() {
		t.Skip("the SAM build of every function for linux/arm64, about two minutes: make test runs it")
	}
	path, tpl := load(t)
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatal("make is needed: sam build runs the Makefile's targets")
	}
	for _, fn := range tpl.Functions {
		t.Run(fn.LogicalID, func(t *testing.T) {
			scratch, artifacts := t.TempDir(), t.TempDir()
			copyTree(t, filepath.Dir(path), scratch)
			cmd := exec.Command("make", "--makefile", filepath.Join(scratch, "Makefile"), "build-"+fn.LogicalID)
			cmd.Dir, cmd.Env = scratch, append(os.Environ(), "ARTIFACTS_DIR="+artifacts)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("make build-%s: %v\n%s", fn.LogicalID, err, out)
			}
			bootstrap := filepath.Join(artifacts, "bootstrap")
			info, err := os.Stat(bootstrap)
			if err != nil {
				t.Fatalf("no bootstrap in ARTIFACTS_DIR: %v", err)
			}
			if info.Mode().Perm()&0o111 == 0 {
				t.Errorf("bootstrap mode %v is not executable", info.Mode())
			}
			f, err := elf.Open(bootstrap)
			if err != nil {
				t.Fatalf("bootstrap is not an ELF file: %v", err)
			}
			defer f.Close()
			if f.Machine != elf.EM_AARCH64 || f.Class != elf.ELFCLASS64 || f.Type != elf.ET_EXEC {
				t.Errorf("bootstrap is %v %v %v, want EM_AARCH64 ELFCLASS64 ET_EXEC", f.Machine, f.Class, f.Type)
			}
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP {
					t.Errorf("bootstrap is dynamically linked (PT_INTERP): want CGO_ENABLED=0")
				}
			}
		})
	}
}
