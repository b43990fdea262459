//! A reader for DiskSim's libparam syntax: `type NAME { key = value, … }` blocks, nested
//! anonymous blocks (`Scheduler = disksim_ioqueue { … }`), lists `[ … ]`, `source FILE`
//! includes (at top level, or as a value: the included file's single block), `instantiate
//! [ names ] as NAME` (with `a .. b` ranges, also in list values), `topology TYPE NAME [ … ]`, and `#` comments.
//!
//! Parameter names run up to `=` (they hold spaces, dots, parentheses); runs of blanks inside
//! them are read as one space. A value is a number (integer when it has no `.` or exponent,
//! as libparam's lexer decides), a word, a block or a list. No I/O: files come through the
//! caller's `read_file`.

use super::DiskSimError;

/// A parameter value.
#[derive(Clone, Debug)]
pub struct Value {
    pub kind: Kind,
}

#[derive(Clone, Debug)]
pub enum Kind {
    Int(i64),
    Float(f64),
    Word(String),
    Block(Block),
    List(Vec<Value>),
}

/// A block: `type NAME { … }` at top level, `type { … }` as a value.
#[derive(Clone, Debug)]
pub struct Block {
    pub type_name: String,
    pub name: String,
    pub file: String,
    pub params: Vec<Param>,
}

#[derive(Clone, Debug)]
pub struct Param {
    pub name: String,
    pub value: Value,
    pub line: usize,
}

/// `instantiate [ names ] as NAME`.
#[derive(Clone, Debug)]
pub struct Instance {
    pub names: Vec<String>,
    pub spec: String,
    pub file: String,
    pub line: usize,
}

/// A node of `topology`: `type NAME [ children ]`.
#[derive(Clone, Debug)]
pub struct Topo {
    pub type_name: String,
    pub name: String,
    pub children: Vec<Topo>,
}

/// Everything at the top level of a file and the files it sources.
#[derive(Clone, Debug, Default)]
pub struct Top {
    pub blocks: Vec<Block>,
    pub instances: Vec<Instance>,
    pub topology: Vec<Topo>,
    /// Every file read, in order (the top file first).
    pub files: Vec<String>,
}

pub type ReadFile<'a> = &'a dyn Fn(&str) -> Result<String, String>;

/// `name` relative to the directory of `including` (unless absolute).
pub fn resolve(including: &str, name: &str) -> String {
    if name.starts_with('/') {
        return name.to_string();
    }
    match including.rfind('/') {
        Some(i) => format!("{}/{}", &including[..i], name),
        None => name.to_string(),
    }
}

const MAX_DEPTH: usize = 16;

/// Reads `path` and everything it sources.
pub fn parse_top(path: &str, read_file: ReadFile<'_>) -> Result<Top, DiskSimError> {
    let mut top = Top::default();
    let mut p = Parser::open(path, read_file, 0, "top level")?;
    top.files.push(path.to_string());
    p.top(&mut top)?;
    Ok(top)
}

struct Parser<'a> {
    file: String,
    text: Vec<char>,
    pos: usize,
    line: usize,
    read_file: ReadFile<'a>,
    depth: usize,
    /// The block being read, for error messages.
    context: String,
}

impl<'a> Parser<'a> {
    fn open(
        path: &str,
        read_file: ReadFile<'a>,
        depth: usize,
        context: &str,
    ) -> Result<Parser<'a>, DiskSimError> {
        if depth > MAX_DEPTH {
            return Err(DiskSimError {
                file: path.into(),
                block: context.into(),
                param: "source".into(),
                msg: format!("includes nest deeper than {MAX_DEPTH} (a cycle?)"),
            });
        }
        let text = read_file(path).map_err(|e| DiskSimError {
            file: path.into(),
            block: context.into(),
            param: if depth == 0 {
                "file".into()
            } else {
                "source".into()
            },
            msg: format!("cannot read: {e}"),
        })?;
        Ok(Parser {
            file: path.into(),
            text: text.chars().collect(),
            pos: 0,
            line: 1,
            read_file,
            depth,
            context: "top level".into(),
        })
    }

    fn err(&self, msg: impl Into<String>) -> DiskSimError {
        DiskSimError {
            file: self.file.clone(),
            block: self.context.clone(),
            param: format!("line {}", self.line),
            msg: msg.into(),
        }
    }

    fn peek(&self) -> Option<char> {
        self.text.get(self.pos).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += 1;
        if c == '\n' {
            self.line += 1;
        }
        Some(c)
    }

    fn skip_ws(&mut self) {
        while let Some(c) = self.peek() {
            if c == '#' {
                while let Some(c) = self.peek() {
                    if c == '\n' {
                        break;
                    }
                    self.bump();
                }
            } else if c.is_whitespace() {
                self.bump();
            } else {
                break;
            }
        }
    }

    fn expect(&mut self, want: char) -> Result<(), DiskSimError> {
        self.skip_ws();
        match self.peek() {
            Some(c) if c == want => {
                self.bump();
                Ok(())
            }
            Some(c) => Err(self.err(format!("expected '{want}', found '{c}'"))),
            None => Err(self.err(format!("expected '{want}', found the end of the file"))),
        }
    }

    fn word(&mut self) -> String {
        self.skip_ws();
        let mut w = String::new();
        while let Some(c) = self.peek() {
            if c.is_whitespace() || ",{}[]=#".contains(c) {
                break;
            }
            w.push(c);
            self.bump();
        }
        w
    }

    fn need_word(&mut self, what: &str) -> Result<String, DiskSimError> {
        let w = self.word();
        if w.is_empty() {
            let found = self
                .peek()
                .map_or("the end of the file".to_string(), |c| format!("'{c}'"));
            return Err(self.err(format!("expected {what}, found {found}")));
        }
        Ok(w)
    }

    fn top(&mut self, top: &mut Top) -> Result<(), DiskSimError> {
        loop {
            self.skip_ws();
            if self.peek().is_none() {
                return Ok(());
            }
            let line = self.line;
            let w = self.need_word("a block, `source`, `instantiate` or `topology`")?;
            match w.as_str() {
                "source" => {
                    let name = self.need_word("a file name after `source`")?;
                    let path = resolve(&self.file, &name);
                    let mut sub = Parser::open(&path, self.read_file, self.depth + 1, "top level")?;
                    top.files.push(path);
                    sub.top(top)?;
                }
                "instantiate" => {
                    self.expect('[')?;
                    let mut names = Vec::new();
                    loop {
                        self.skip_ws();
                        if self.peek() == Some(']') {
                            self.bump();
                            break;
                        }
                        let first = self.need_word("an instance name")?;
                        names.extend(self.maybe_range(first)?);
                        self.skip_ws();
                        if self.peek() == Some(',') {
                            self.bump();
                        }
                    }
                    let as_ = self.need_word("`as`")?;
                    if as_ != "as" {
                        return Err(self.err(format!(
                            "expected `as` after the instance list, found {as_:?}"
                        )));
                    }
                    let spec = self.need_word("a block name after `as`")?;
                    top.instances.push(Instance {
                        names,
                        spec,
                        file: self.file.clone(),
                        line,
                    });
                }
                "topology" => {
                    let type_name = self.need_word("a component type")?;
                    top.topology.push(self.topo(type_name)?);
                }
                _ => {
                    let name = self.need_word("a block name")?;
                    self.context = format!("{w} {name}");
                    self.expect('{')?;
                    let params = self.params()?;
                    top.blocks.push(Block {
                        type_name: w,
                        name,
                        file: self.file.clone(),
                        params,
                    });
                    self.context = "top level".into();
                }
            }
        }
    }

    /// `first .. last` when `..` follows `first` (libparam's DOTDOT, in instance lists and
    /// list values): every name from `first` to `last` inclusive, else just `first`.
    fn maybe_range(&mut self, first: String) -> Result<Vec<String>, DiskSimError> {
        self.skip_ws();
        let (at, line) = (self.pos, self.line);
        if self.word() != ".." {
            self.pos = at;
            self.line = line;
            return Ok(vec![first]);
        }
        let last = self.need_word("a name after `..`")?;
        expand_range(&first, &last).map_err(|m| self.err(format!("`{first} .. {last}`: {m}")))
    }

    fn topo(&mut self, type_name: String) -> Result<Topo, DiskSimError> {
        let name = self.need_word("a component name")?;
        self.expect('[')?;
        let mut children = Vec::new();
        loop {
            self.skip_ws();
            match self.peek() {
                Some(']') => {
                    self.bump();
                    break;
                }
                Some(',') => {
                    self.bump();
                }
                _ => {
                    let t = self.need_word("a component type or ']'")?;
                    children.push(self.topo(t)?);
                }
            }
        }
        Ok(Topo {
            type_name,
            name,
            children,
        })
    }

    /// `key = value` pairs up to and including the closing `}`.
    fn params(&mut self) -> Result<Vec<Param>, DiskSimError> {
        let mut out = Vec::new();
        loop {
            self.skip_ws();
            match self.peek() {
                None => return Err(self.err("unterminated block: expected '}'")),
                Some('}') => {
                    self.bump();
                    return Ok(out);
                }
                _ => {}
            }
            let line = self.line;
            let mut name = String::new();
            while let Some(c) = self.peek() {
                if c == '=' {
                    break;
                }
                if "{}[],#\n".contains(c) {
                    return Err(self.err(format!(
                        "expected `name = value`, found '{}' in {:?}",
                        c.escape_default(),
                        name.trim()
                    )));
                }
                name.push(c);
                self.bump();
            }
            if self.peek().is_none() {
                return Err(self.err("unterminated block: expected '}'"));
            }
            self.bump();
            let name = name.split_whitespace().collect::<Vec<_>>().join(" ");
            if name.is_empty() {
                return Err(self.err("a parameter has no name"));
            }
            let value = self.value(&name)?;
            out.push(Param { name, value, line });
            self.skip_ws();
            match self.peek() {
                Some(',') => {
                    self.bump();
                }
                Some('}') => {}
                Some(c) => {
                    return Err(self.err(format!("expected ',' or '}}' after a value, found '{c}'")))
                }
                None => return Err(self.err("unterminated block: expected '}'")),
            }
        }
    }

    fn value(&mut self, param: &str) -> Result<Value, DiskSimError> {
        self.skip_ws();
        if self.peek() == Some('[') {
            self.bump();
            let mut items = Vec::new();
            loop {
                self.skip_ws();
                match self.peek() {
                    Some(']') => {
                        self.bump();
                        break;
                    }
                    None => {
                        return Err(self.err(format!("{param}: unterminated list: expected ']'")))
                    }
                    _ => {}
                }
                let item = self.value(param)?;
                match item.kind {
                    Kind::Word(w) => {
                        items.extend(self.maybe_range(w)?.into_iter().map(|w| Value {
                            kind: Kind::Word(w),
                        }))
                    }
                    _ => items.push(item),
                }
                self.skip_ws();
                match self.peek() {
                    Some(',') => {
                        self.bump();
                    }
                    Some(']') => {}
                    Some(c) => {
                        return Err(self.err(format!(
                            "{param}: expected ',' or ']' in a list, found '{c}'"
                        )))
                    }
                    None => {
                        return Err(self.err(format!("{param}: unterminated list: expected ']'")))
                    }
                }
            }
            return Ok(Value {
                kind: Kind::List(items),
            });
        }
        let w = self.need_word(&format!("a value for {param:?}"))?;
        if w == "source" {
            let name = self.need_word("a file name after `source`")?;
            let path = resolve(&self.file, &name);
            let mut sub = Parser::open(&path, self.read_file, self.depth + 1, &self.context)?;
            let mut top = Top::default();
            sub.top(&mut top)?;
            if top.blocks.len() != 1 || !top.instances.is_empty() || !top.topology.is_empty() {
                return Err(self.err(format!(
                    "{param}: `source {name}` must hold exactly one block, found {} blocks",
                    top.blocks.len()
                )));
            }
            let block = top.blocks.remove(0);
            return Ok(Value {
                kind: Kind::Block(block),
            });
        }
        self.skip_ws();
        if self.peek() == Some('{') {
            self.bump();
            let inner = format!("{} / {param} ({w})", self.context);
            let outer = std::mem::replace(&mut self.context, inner);
            let params = self.params()?;
            self.context = outer;
            let block = Block {
                type_name: w,
                name: String::new(),
                file: self.file.clone(),
                params,
            };
            return Ok(Value {
                kind: Kind::Block(block),
            });
        }
        Ok(Value {
            kind: number_or_word(w),
        })
    }
}

/// The names of a range `first .. last`, as libparam builds them (libparam.y, `STRING DOTDOT
/// STRING` with `dumb_split`): both ends are one prefix followed by a decimal number; the
/// names are the prefix followed by each number from the first to the last, inclusive,
/// printed without leading zeros (`%s%d`). libparam needs a prefix of at least two
/// characters (`dumb_split` fails on `d0`); a name with no number it reads as number 0,
/// which is refused here rather than guessed.
pub fn expand_range(first: &str, last: &str) -> Result<Vec<String>, String> {
    fn split(s: &str) -> Result<(&str, u64), String> {
        let digits = s.len() - s.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        let cut = s.len() - digits;
        if digits == 0 {
            return Err(format!("{s:?} does not end in a number"));
        }
        if cut < 2 {
            return Err(format!(
                "{s:?}: DiskSim's libparam needs a name of at least two characters before the number"
            ));
        }
        let n = s[cut..]
            .parse::<u64>()
            .map_err(|_| format!("{s:?}: the number is too large"))?;
        Ok((&s[..cut], n))
    }
    let (p1, a) = split(first)?;
    let (p2, b) = split(last)?;
    if p1 != p2 {
        return Err(format!(
            "the names differ before the number ({p1:?} vs {p2:?})"
        ));
    }
    if b < a {
        return Err(format!("the range is empty ({a} > {b})"));
    }
    if b - a >= 4096 {
        return Err(format!("{} names; at most 4096", b - a + 1));
    }
    Ok((a..=b).map(|i| format!("{p1}{i}")).collect())
}

fn number_or_word(w: String) -> Kind {
    let digits = w.strip_prefix('-').unwrap_or(&w);
    if !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()) {
        if let Ok(i) = w.parse::<i64>() {
            return Kind::Int(i);
        }
    }
    let numeric = digits.starts_with(|c: char| c.is_ascii_digit() || c == '.');
    if numeric {
        if let Ok(f) = w.parse::<f64>() {
            return Kind::Float(f);
        }
    }
    Kind::Word(w)
}

impl Value {
    /// The value as a number (integers widen).
    pub fn as_f64(&self) -> Option<f64> {
        match self.kind {
            Kind::Int(i) => Some(i as f64),
            Kind::Float(f) => Some(f),
            _ => None,
        }
    }

    pub fn as_int(&self) -> Option<i64> {
        match self.kind {
            Kind::Int(i) => Some(i),
            _ => None,
        }
    }

    pub fn as_word(&self) -> Option<&str> {
        match &self.kind {
            Kind::Word(w) => Some(w),
            _ => None,
        }
    }

    /// Short text of the value for messages and provenance.
    pub fn show(&self) -> String {
        match &self.kind {
            Kind::Int(i) => i.to_string(),
            Kind::Float(f) => f.to_string(),
            Kind::Word(w) => w.clone(),
            Kind::Block(b) => format!("{} {{…}}", b.type_name),
            Kind::List(v) => format!("[{} items]", v.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &'static str) -> Result<Top, DiskSimError> {
        parse_top("t.parv", &move |p: &str| {
            if p == "t.parv" {
                Ok(text.to_string())
            } else {
                Err("no such file".into())
            }
        })
    }

    #[test]
    fn blocks_lists_nested_blocks_and_comments() {
        let top = one(
            "# head\ndisksim_bus B { type = 1, Read block transfer time = 0.07 , # c\n x (in blks)  = [ 1, 2.5, w ],\n S = disksim_ioqueue { P = 1 } }\ninstantiate [ b0, b1 ] as B\ntopology disksim_bus b0 [ disksim_disk d0 [] ]\n",
        )
        .unwrap();
        let b = &top.blocks[0];
        assert_eq!(
            (b.type_name.as_str(), b.name.as_str()),
            ("disksim_bus", "B")
        );
        assert_eq!(b.params[0].value.as_int(), Some(1));
        assert_eq!(b.params[1].name, "Read block transfer time");
        assert_eq!(b.params[1].value.as_f64(), Some(0.07));
        assert_eq!(b.params[2].name, "x (in blks)");
        assert!(matches!(&b.params[2].value.kind, Kind::List(v) if v.len() == 3));
        assert!(
            matches!(&b.params[3].value.kind, Kind::Block(x) if x.type_name == "disksim_ioqueue")
        );
        assert_eq!(top.instances[0].names, ["b0", "b1"]);
        assert_eq!(top.topology[0].children[0].name, "d0");
    }

    #[test]
    fn malformed_text_names_file_block_and_line() {
        let e = one("disksim_bus B {\n type = 1\n Arbitration time = 0.0 }").unwrap_err();
        assert_eq!(e.file, "t.parv");
        assert_eq!(e.block, "disksim_bus B");
        assert_eq!(e.param, "line 3");
        let e = one("disksim_bus B {\n type = 1,\n").unwrap_err();
        assert!(e.msg.contains("unterminated"), "{e}");
        let e = one("disksim_disk D { Model = source nope.model }").unwrap_err();
        assert_eq!(e.file, "nope.model");
    }

    #[test]
    fn ranges_expand_inclusively_in_instance_lists_and_list_values() {
        let top = one(
            "disksim_logorg L { devices = [ disk0 .. disk2, spare7 ] }\ninstantiate [ disk0 .. disk2 , x ] as D\ninstantiate [bus08 .. bus10] as B\n",
        )
        .unwrap();
        assert_eq!(top.instances[0].names, ["disk0", "disk1", "disk2", "x"]);
        // `%s%d`: leading zeros are not kept.
        assert_eq!(top.instances[1].names, ["bus8", "bus9", "bus10"]);
        let Kind::List(devs) = &top.blocks[0].params[0].value.kind else {
            panic!("a list")
        };
        let devs: Vec<_> = devs.iter().map(|v| v.as_word().unwrap()).collect();
        assert_eq!(devs, ["disk0", "disk1", "disk2", "spare7"]);
        // No spaces: one name, as libparam's lexer reads it.
        let top = one("instantiate [ disk0..disk2 ] as D").unwrap();
        assert_eq!(top.instances[0].names, ["disk0..disk2"]);
    }

    #[test]
    fn bad_ranges_are_refused_with_their_line() {
        let e = one("\ninstantiate [ disk3 .. disk1 ] as D").unwrap_err();
        assert_eq!(e.param, "line 2");
        assert!(
            e.msg.contains("`disk3 .. disk1`: the range is empty"),
            "{e}"
        );
        let e = one("instantiate [ disk0 .. bus3 ] as D").unwrap_err();
        assert!(e.msg.contains("differ before the number"), "{e}");
        let e = one("instantiate [ disk .. disk3 ] as D").unwrap_err();
        assert!(e.msg.contains("does not end in a number"), "{e}");
        let e = one("instantiate [ d0 .. d3 ] as D").unwrap_err();
        assert!(e.msg.contains("at least two characters"), "{e}");
        let e = one("instantiate [ disk0 .. ] as D").unwrap_err();
        assert!(e.msg.contains("a name after `..`"), "{e}");
    }

    #[test]
    fn includes_resolve_beside_the_including_file() {
        assert_eq!(resolve("a/b/c.parv", "d.model"), "a/b/d.model");
        assert_eq!(resolve("c.parv", "d.model"), "d.model");
        assert_eq!(resolve("a/c.parv", "/abs/d"), "/abs/d");
    }
}
