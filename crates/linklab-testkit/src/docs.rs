//! linklab's documents read through their `linklab-results` types, strictly: a document that
//! holds a field its type does not fails the test, naming the field, so a document and its
//! type cannot drift apart unnoticed (most of the types accept unknown fields, as a reader of
//! an older or newer document must).
//!
//! The check is a round trip: the JSON is read into the type, the type written back, and
//! every field of the JSON must still be there (a `null` may come back absent: an `Option`
//! the type leaves out when `None`). Values are the type's to check, not this module's.

use std::path::Path;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

/// Reads the document at `path` into `T`; panics when it does not parse or holds a field `T`
/// does not.
pub fn read<T: DeserializeOwned + Serialize>(path: &Path) -> T {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read the document {}: {e}", path.display()));
    parse_named(&text, &path.display().to_string())
}

/// Reads the document `text` (JSON) into `T`; panics when it does not parse or holds a field
/// `T` does not.
pub fn parse<T: DeserializeOwned + Serialize>(text: &str) -> T {
    parse_named(text, std::any::type_name::<T>())
}

/// Reads a document already parsed as JSON into `T`, as strictly as [`parse`].
pub fn from_value<T: DeserializeOwned + Serialize>(value: &Value) -> T {
    let typed: T = serde_json::from_value(value.clone()).unwrap_or_else(|e| {
        panic!(
            "the document is no {}: {e}\n{value}",
            std::any::type_name::<T>()
        )
    });
    let back = serde_json::to_value(&typed).expect("a document type serializes");
    let mut dropped = Vec::new();
    unknown_fields(value, &back, "", &mut dropped);
    assert!(
        dropped.is_empty(),
        "the document holds fields {} does not (add them to the type, or stop writing them): {}",
        std::any::type_name::<T>(),
        dropped.join(", ")
    );
    typed
}

/// [`parse`], naming `what` when the text is no JSON.
fn parse_named<T: DeserializeOwned + Serialize>(text: &str, what: &str) -> T {
    let value: Value =
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{what}: not JSON: {e}\n{text}"));
    from_value(&value)
}

/// The paths of the fields of `input` that `kept` (the type's round trip) lost.
fn unknown_fields(input: &Value, kept: &Value, at: &str, out: &mut Vec<String>) {
    match (input, kept) {
        (Value::Object(i), Value::Object(k)) => {
            for (key, value) in i {
                let path = format!("{at}.{key}");
                match k.get(key) {
                    Some(kv) => unknown_fields(value, kv, &path, out),
                    None if value.is_null() => {}
                    None => out.push(path),
                }
            }
        }
        (Value::Array(i), Value::Array(k)) => {
            for (n, (iv, kv)) in i.iter().zip(k).enumerate() {
                unknown_fields(iv, kv, &format!("{at}[{n}]"), out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, serde::Serialize)]
    struct Inner {
        a: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        b: Option<u32>,
    }

    #[derive(serde::Deserialize, serde::Serialize)]
    struct Doc {
        name: String,
        inner: Vec<Inner>,
    }

    #[test]
    fn a_document_its_type_holds_is_read() {
        let doc: Doc = parse(r#"{"name": "x", "inner": [{"a": 1}, {"a": 2, "b": null}]}"#);
        assert_eq!((doc.name.as_str(), doc.inner.len()), ("x", 2));
    }

    #[test]
    #[should_panic(expected = "fields linklab_testkit::docs::tests::Doc does not")]
    fn a_field_the_type_does_not_hold_fails_naming_it() {
        let text = r#"{"name": "x", "inner": [{"a": 1, "renamed": 3}], "extra": {}}"#;
        let value: Value = serde_json::from_str(text).unwrap();
        let back = serde_json::to_value(serde_json::from_value::<Doc>(value.clone()).unwrap());
        let mut lost = Vec::new();
        unknown_fields(&value, &back.unwrap(), "", &mut lost);
        assert_eq!(lost, [".inner[0].renamed", ".extra"]);
        let _: Doc = parse(text);
    }
}
