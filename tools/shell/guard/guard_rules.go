package guard

import (
	"fmt"
	"strings"
)

// ruleCommands are the programs the built-in rules look at; a command
// name that is a glob (/b?n/r?) is checked as each of them it matches.
var ruleCommands = []string{"rm", "mv", "find", "chmod", "chown", "chgrp", "dd", "tee", "cp", "install", "shred",
	"mkfs", "mkfs.ext2", "mkfs.ext3", "mkfs.ext4", "mkfs.xfs", "mkfs.btrfs", "mkfs.vfat", "mkfs.fat", "mkfs.ntfs",
	"mkfs.exfat", "mke2fs", "mkswap", "mkdosfs", "mkntfs", "wipefs", "blkdiscard"}

// formatters write a new file system (or erase one) on their operand.
var formatters = map[string]bool{"mkfs": true, "mke2fs": true, "mkswap": true, "mkdosfs": true, "mkntfs": true,
	"wipefs": true, "blkdiscard": true}

// rules applies the built-in rules to one command, wrappers removed.
func (w *guardWalk) rules(argv []string, depth int) {
	name := baseName(argv[0])
	ops := operands(argv[1:])
	switch {
	case name == "rm":
		for _, p := range ops {
			if d, bad := w.rootish(p); bad {
				w.refuse(RuleRmRoot, fmt.Sprintf("it removes %s", what(d)), argv)
				return
			}
		}
	case name == "mv":
		for i, p := range ops {
			if i == len(ops)-1 && len(ops) > 1 {
				if dev, bad := w.device(p); bad {
					w.refuse(RuleWriteToDevice, fmt.Sprintf("it moves a file onto the device %s", dev), argv)
				}
				break
			}
			if d, bad := w.rootish(p); bad {
				w.refuse(RuleRmRoot, fmt.Sprintf("it moves %s away", what(d)), argv)
				return
			}
		}
	case name == "find":
		w.find(argv, depth)
	case name == "chmod" || name == "chown" || name == "chgrp":
		if !recursive(argv[1:]) {
			return
		}
		for _, p := range ops {
			if d, bad := w.rootish(p); bad {
				w.refuse(RuleChmodRoot, fmt.Sprintf("it changes the permissions or owner of everything under %s", what(d)), argv)
				return
			}
		}
	case formatters[name] || strings.HasPrefix(name, "mkfs."):
		if len(ops) == 0 {
			return // --help, -V
		}
		for _, p := range ops {
			if _, dev := w.device(p); dev || strings.Contains(p, unknownMark) || strings.HasPrefix(w.abs(p), "/dev/") {
				w.refuse(RuleMkfs, fmt.Sprintf("%s formats or erases a device", name), argv)
				return
			}
		}
	case name == "dd":
		for _, a := range argv[1:] {
			if of, ok := strings.CutPrefix(a, "of="); ok {
				if dev, bad := w.device(of); bad {
					w.refuse(RuleWriteToDevice, fmt.Sprintf("it writes into the device %s", dev), argv)
					return
				}
			}
		}
	case name == "tee" || name == "shred":
		for _, p := range ops {
			if dev, bad := w.device(p); bad {
				w.refuse(RuleWriteToDevice, fmt.Sprintf("it writes into the device %s", dev), argv)
				return
			}
		}
	case name == "cp" || name == "install":
		if len(ops) > 1 {
			if dev, bad := w.device(ops[len(ops)-1]); bad {
				w.refuse(RuleWriteToDevice, fmt.Sprintf("it writes into the device %s", dev), argv)
			}
		}
	}
}

// find refuses find over a protected directory with -delete, and checks
// the commands of -exec and -ok as if run on the start paths.
func (w *guardWalk) find(argv []string, depth int) {
	args := argv[1:]
	var starts []string
	for len(args) > 0 && !strings.HasPrefix(args[0], "-") && args[0] != "(" && args[0] != "!" {
		starts = append(starts, args[0])
		args = args[1:]
	}
	if len(starts) == 0 {
		starts = []string{"."}
	}
	root := ""
	for _, s := range starts {
		if d, bad := w.rootish(s); bad {
			root = d
		}
	}
	for i := 0; i < len(args) && w.found == nil; i++ {
		switch args[i] {
		case "-delete":
			if root != "" {
				w.refuse(RuleRmRoot, fmt.Sprintf("it deletes everything under %s", what(strings.TrimPrefix(root, "everything in "))), argv)
			}
		case "-exec", "-execdir", "-ok", "-okdir":
			var cmd []string
			for i++; i < len(args) && args[i] != ";" && args[i] != "+"; i++ {
				cmd = append(cmd, args[i])
			}
			for _, s := range starts {
				sub := make([]string, len(cmd))
				for j, c := range cmd {
					sub[j] = strings.ReplaceAll(c, "{}", s)
				}
				if len(sub) > 0 {
					w.argv(sub, "", false, depth)
				}
			}
		}
	}
}

// operands are a command's arguments that are not options: those not
// starting with "-", and all after "--".
func operands(args []string) []string {
	var out []string
	for i, a := range args {
		if a == "--" {
			return append(out, args[i+1:]...)
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			out = append(out, a)
		}
	}
	return out
}

// recursive reports whether args hold -R, -r or --recursive.
func recursive(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--recursive" {
			return true
		}
		if len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsAny(a[1:], "Rr") {
			return true
		}
	}
	return false
}

// what names a protected directory in a refusal.
func what(d string) string {
	all, in := strings.CutPrefix(d, "everything in ")
	switch {
	case in && all == "/":
		return "everything in / (the whole file system)"
	case d == "/":
		return "/ (the whole file system)"
	}
	return d + " (a system or home directory)"
}

// userRule returns the name of the first configured rule text matches.
func (g *Guard) userRule(text string) string {
	return blockedBy(g.user, text)
}
