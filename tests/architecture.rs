//! The layering ARCHITECTURE.md describes, checked on the sources: `store` (the functional core)
//! imports nothing from `actors`, `protocol` or `server`; `actors` nothing from `protocol` or
//! `server`; no cycle between the modules of the crate; no source file much over 800 lines;
//! `unsafe` only in `sys`; no wire code as an error outside `protocol`; ARCHITECTURE.md names
//! every module of `store` and `actors`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

const MAX_LINES: usize = 850;

/// Top-level layers, lowest first; a layer may import only from layers before it.
const LAYERS: &[&str] = &["sys", "error_code", "store", "config", "limits", "metrics", "actors", "protocol", "server"];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("src is readable") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `src/actors/messages/partition.rs` -> ["actors", "messages", "partition"];
/// `src/actors/messages/mod.rs` -> ["actors", "messages"].
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string()).collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib" || p == "main") {
        parts.pop();
    }
    parts
}

/// The node a module belongs to in the dependency graph: its first two path components
/// (`actors::partition`, `store::log`), or the top-level module itself.
fn node(path: &[String]) -> String {
    path.iter().take(2).cloned().collect::<Vec<_>>().join("::")
}

/// Code without `//` comments (doc comments name modules without depending on them).
fn code_of(text: &str) -> String {
    text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// The modules a file refers to, as absolute paths (`crate::a::b`, `super::b`, `self::b`).
fn references(module: &[String], is_mod_file: bool, code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    for (start, _) in code.match_indices("crate::").chain(code.match_indices("super::")) {
        if start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_') {
            continue;
        }
        let rest = &code[start..];
        let idents: Vec<&str> = rest
            .split("::")
            .map(|s| s.split(|c: char| !(c.is_alphanumeric() || c == '_')).next().unwrap_or(""))
            .collect();
        let mut path: Vec<String> = if idents[0] == "crate" {
            Vec::new()
        } else {
            // `super` in a mod.rs is the parent of its directory; in x.rs the parent of x.
            let mut base = module.to_vec();
            if !is_mod_file || !base.is_empty() {
                base.pop();
            }
            base
        };
        let mut i = 1;
        while i < idents.len() && idents[i - 1] == "super" && idents[i] == "super" {
            path.pop();
            i += 1;
        }
        for ident in idents.iter().skip(i).take(2) {
            if ident.is_empty() || ident.chars().next().is_some_and(|c| c.is_uppercase()) {
                break;
            }
            path.push(ident.to_string());
        }
        // `{a, b}` groups: each member is a reference of its own.
        if let Some(brace) = rest.find('{') {
            let prefix = &rest[..brace];
            if !prefix.contains(';') && !prefix.contains('\n') && prefix.trim_end().ends_with("::") {
                let prefix_idents: Vec<String> = prefix
                    .trim_end_matches("::")
                    .split("::")
                    .skip(1)
                    .filter(|s| !s.is_empty() && *s != "super")
                    .map(str::to_string)
                    .collect();
                if let Some(end) = rest[brace..].find('}') {
                    for member in rest[brace + 1..brace + end].split(',') {
                        let m = member.trim().split("::").next().unwrap_or("").trim();
                        if m.is_empty() || m == "self" || m.chars().next().is_some_and(|c| c.is_uppercase()) {
                            continue;
                        }
                        let mut p = if idents[0] == "crate" { Vec::new() } else { path.clone() };
                        if idents[0] == "crate" {
                            p.extend(prefix_idents.iter().cloned());
                        }
                        p.push(m.to_string());
                        out.push(p);
                    }
                }
            }
        }
        out.push(path);
    }
    out
}

struct Crate {
    edges: BTreeMap<String, BTreeSet<String>>,
    long_files: Vec<String>,
}

fn scan() -> Crate {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut long_files = Vec::new();
    for file in files {
        let text = fs::read_to_string(&file).expect("source is UTF-8");
        let lines = text.lines().count();
        if lines > MAX_LINES {
            long_files.push(format!("{} ({lines} lines)", file.display()));
        }
        let module = module_path(&src, &file);
        let is_mod = file.file_name().is_some_and(|n| n == "mod.rs");
        let from = node(&module);
        for reference in references(&module, is_mod, &code_of(&text)) {
            let to = node(&reference);
            if !to.is_empty() && to != from && !from.is_empty() {
                edges.entry(from.clone()).or_default().insert(to);
            }
        }
    }
    Crate { edges, long_files }
}

fn layer_of(node: &str) -> Option<usize> {
    let top = node.split("::").next().unwrap_or("");
    LAYERS.iter().position(|l| *l == top)
}

#[test]
fn layers_import_only_downwards() {
    let c = scan();
    let mut wrong = Vec::new();
    for (from, tos) in &c.edges {
        for to in tos {
            if let (Some(a), Some(b)) = (layer_of(from), layer_of(to)) {
                if b > a {
                    wrong.push(format!("{from} -> {to}"));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "imports against the layering: {wrong:#?}");
}

#[test]
fn no_module_cycles() {
    let c = scan();
    // Depth-first search for a back edge; report the cycle it closes.
    fn visit(
        n: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
        cycles: &mut Vec<String>,
    ) {
        state.insert(n.to_string(), 1);
        stack.push(n.to_string());
        for m in edges.get(n).into_iter().flatten() {
            match state.get(m.as_str()).copied().unwrap_or(0) {
                0 => visit(m, edges, state, stack, cycles),
                1 => {
                    let from = stack.iter().position(|s| s == m).unwrap_or(0);
                    cycles.push(format!("{} -> {m}", stack[from..].join(" -> ")));
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n.to_string(), 2);
    }
    let mut state = BTreeMap::new();
    let mut cycles = Vec::new();
    for n in c.edges.keys() {
        if !state.contains_key(n.as_str()) {
            visit(n, &c.edges, &mut state, &mut Vec::new(), &mut cycles);
        }
    }
    assert!(cycles.is_empty(), "module cycles: {cycles:#?}");
}

#[test]
fn no_source_file_over_the_limit() {
    let c = scan();
    assert!(c.long_files.is_empty(), "files over {MAX_LINES} lines: {:#?}", c.long_files);
}

#[test]
fn the_scanner_sees_references() {
    // Guards the checks above against a scanner that finds nothing.
    let m = vec!["actors".to_string(), "partition".to_string()];
    let refs = references(&m, false, "use super::syncer::Syncer;\nuse crate::store::{log, batch::X};");
    assert!(refs.contains(&vec!["actors".to_string(), "syncer".to_string()]), "{refs:?}");
    assert!(refs.contains(&vec!["store".to_string(), "log".to_string()]), "{refs:?}");
    assert!(refs.contains(&vec!["store".to_string(), "batch".to_string()]), "{refs:?}");
    let c = scan();
    assert!(c.edges.get("actors::partition").is_some_and(|e| e.iter().any(|t| t.starts_with("store::"))));
}

/// The error types of every `Result<T, E>` spelled in `code` (E as written).
fn result_error_types(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in code.match_indices("Result<") {
        let (mut depth, mut last_comma) = (0usize, None);
        let args = &code[at + "Result<".len()..];
        for (i, ch) in args.char_indices() {
            match ch {
                '<' | '(' | '[' => depth += 1,
                ')' | ']' => depth = depth.saturating_sub(1),
                ',' if depth == 0 => last_comma = Some(i),
                '>' if depth == 0 => {
                    if let Some(c) = last_comma {
                        out.push(args[c + 1..i].trim().to_string());
                    }
                    break;
                }
                '>' => depth -= 1,
                _ => {}
            }
        }
    }
    out
}

/// error_code.rs: module errors are typed (`thiserror` enums, `ResponseError`); only the wire
/// edge (`protocol`) turns them into the `i16` of a response.
#[test]
fn wire_codes_only_at_the_wire_edge() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut found = Vec::new();
    for f in files.iter().filter(|f| !f.starts_with(src.join("protocol"))) {
        let code = code_of(&fs::read_to_string(f).expect("source is readable"));
        if result_error_types(&code).iter().any(|e| e == "i16") {
            found.push(f.strip_prefix(&src).expect("under src").display().to_string());
        }
    }
    assert!(found.is_empty(), "Result<_, i16> outside protocol: {found:#?}");
    // The scanner sees one when there is one.
    assert_eq!(result_error_types("fn f() -> Result<Option<Vec<u8>>, i16> {}"), vec!["i16"]);
    assert_eq!(result_error_types("type R = Result<(u8, i16), E>;"), vec!["E"]);
}

/// `unsafe` lives in `sys` (the system calls std does not wrap) and in the one `BufMut` impl of
/// `protocol::outgoing`, each with its SAFETY comment; nowhere else.
#[test]
fn unsafe_only_in_sys() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let allowed = [src.join("sys.rs"), src.join("protocol").join("outgoing.rs")];
    let mut found = Vec::new();
    for f in files.iter().filter(|f| !allowed.contains(f)) {
        let code = code_of(&fs::read_to_string(f).expect("source is readable"));
        if code.split(|c: char| !c.is_alphanumeric() && c != '_').any(|w| w == "unsafe") {
            found.push(f.strip_prefix(&src).expect("under src").display().to_string());
        }
    }
    assert!(found.is_empty(), "unsafe outside src/sys.rs: {found:#?}");
    let outgoing = code_of(&fs::read_to_string(&allowed[1]).expect("source is readable"));
    assert_eq!(outgoing.matches("unsafe").count(), 3, "protocol::outgoing: only the BufMut impl is unsafe");
}

/// ARCHITECTURE.md names every module of `store` and `actors`: as `store::x` / `actors::x`, or as
/// `` `x` `` on a line that names a sibling as `store::` / `actors::` (a table row of several).
#[test]
fn architecture_md_names_every_store_and_actors_module() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let mut missing = Vec::new();
    for layer in ["store", "actors"] {
        let mut names: Vec<String> = std::fs::read_dir(root.join("src").join(layer))
            .expect("layer dir")
            .map(|e| e.expect("dir entry").file_name().to_string_lossy().trim_end_matches(".rs").to_string())
            .filter(|n| n != "mod" && n != "tests")
            .collect();
        names.sort();
        names.dedup();
        for name in names {
            let qualified = format!("{layer}::{name}");
            let named = doc.lines().any(|l| {
                l.contains(&qualified) || (l.contains(&format!("`{layer}::")) && l.contains(&format!("`{name}`")))
            });
            if !named {
                missing.push(qualified);
            }
        }
    }
    assert!(missing.is_empty(), "modules ARCHITECTURE.md does not name: {missing:?}");
}
