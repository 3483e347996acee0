//! Parses compute-sanitizer's `--xml --save` output into typed records. Every record kind
//! seen on the H200 has a variant; an unknown kind is kept as [`Record::Unknown`] and shown,
//! never dropped.

use roxmltree::{Document, Node};
use serde::Serialize;

/// Where in the source a record points.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Where {
    pub func: String,
    pub path: String,
    pub line: Option<u32>,
    pub pc: Option<String>,
}

/// One side of a racecheck analysis record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Access {
    pub direction: String,
    pub at: Where,
    pub count: Option<u64>,
}

/// One `<record>`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind")]
pub enum Record {
    /// racecheck, analysis mode: a source access racing with one or more destinations.
    Analysis {
        level: String,
        text: String,
        source: Access,
        destinations: Vec<Access>,
    },
    /// racecheck, hazard mode: one RAW/WAR/WAW pair between two threads.
    Hazard {
        hazard: String,
        text: String,
        first: Access,
        second: Access,
    },
    /// synccheck: a barrier error of some type.
    Synccheck {
        text: String,
        error: String,
        at: Where,
    },
    /// memcheck: a precise memory error.
    Precise {
        level: String,
        text: String,
        space: String,
        direction: String,
        error: String,
        at: Where,
    },
    /// initcheck: an uninitialized read.
    Initcheck { text: String, at: Where },
    /// A CUDA API call that failed.
    Api {
        text: String,
        api: String,
        error: String,
    },
    /// A kind racegate does not know: kept with its text.
    Unknown {
        name: String,
        text: String,
        at: Where,
    },
}

/// Parses a whole XML file.
pub fn parse(text: &str) -> Result<Vec<Record>, String> {
    let doc = Document::parse(text).map_err(|e| e.to_string())?;
    let root = doc.root_element();
    if root.tag_name().name() != "ComputeSanitizerOutput" {
        return Err(format!(
            "root element is <{}>, not <ComputeSanitizerOutput>",
            root.tag_name().name()
        ));
    }
    Ok(root
        .children()
        .filter(|n| n.has_tag_name("record"))
        .map(record)
        .collect())
}

fn child<'a, 'i>(n: Node<'a, 'i>, name: &str) -> Option<Node<'a, 'i>> {
    n.children().find(|c| c.has_tag_name(name))
}

fn text_of(n: Option<Node>, name: &str) -> String {
    n.and_then(|n| child(n, name))
        .and_then(|c| c.text())
        .unwrap_or("")
        .trim()
        .to_string()
}

fn where_of(n: Option<Node>) -> Where {
    let Some(w) = n else { return Where::default() };
    Where {
        func: text_of(Some(w), "func"),
        path: text_of(Some(w), "path"),
        line: text_of(Some(w), "line").parse().ok(),
        pc: Some(text_of(Some(w), "pc")).filter(|s| !s.is_empty()),
    }
}

fn access(n: Node, direction_tag: &str) -> Access {
    Access {
        direction: text_of(Some(n), direction_tag),
        at: where_of(child(n, "where")),
        count: text_of(Some(n), "count").parse().ok(),
    }
}

fn record(r: Node) -> Record {
    let kind = text_of(Some(r), "kind");
    let what = child(r, "what");
    let text = text_of(what, "text");
    match kind.as_str() {
        "Analysis" => Record::Analysis {
            level: text_of(Some(r), "level"),
            text,
            source: what
                .and_then(|w| child(w, "source"))
                .map(|s| access(s, "direction"))
                .unwrap_or(Access {
                    direction: String::new(),
                    at: Where::default(),
                    count: None,
                }),
            destinations: what
                .map(|w| {
                    w.children()
                        .filter(|c| c.has_tag_name("destination"))
                        .map(|d| access(d, "direction"))
                        .collect()
                })
                .unwrap_or_default(),
        },
        "Hazard" => {
            let common = what.and_then(|w| child(w, "common"));
            let side = |tag| {
                what.and_then(|w| child(w, tag))
                    .map(|t| access(t, "access"))
                    .unwrap_or(Access {
                        direction: String::new(),
                        at: Where::default(),
                        count: None,
                    })
            };
            Record::Hazard {
                hazard: text_of(common, "type"),
                text,
                first: side("thread0"),
                second: side("thread1"),
            }
        }
        "Synccheck" => Record::Synccheck {
            text,
            error: text_of(what, "type"),
            at: where_of(child(r, "where")),
        },
        "Precise" => Record::Precise {
            level: text_of(Some(r), "level"),
            text,
            space: text_of(what, "space"),
            direction: text_of(what, "direction"),
            error: text_of(what, "error"),
            at: where_of(child(r, "where")),
        },
        "Initcheck" => Record::Initcheck {
            text,
            at: where_of(child(r, "where")),
        },
        "Api" => Record::Api {
            text,
            api: text_of(what, "api"),
            error: text_of(what, "error"),
        },
        other => Record::Unknown {
            name: other.to_string(),
            text,
            at: where_of(child(r, "where")),
        },
    }
}
