//! `#[derive(Declare)]`: a save's history declared on the fields of the game's types, as
//! savechain's declared steps (`savechain::upgrade::declared`). Use it through the
//! library, `savechain::Declare`, with its `derive` feature.
//!
//! Each field says what happened to it, and at which version (`at = N`: in the step from
//! version N to N + 1); the struct says which of its members were dropped, and why, and
//! which values moved to a place that is not one of its fields' own keys (into a nested
//! struct):
//!
//! ```text
//! #[derive(serde::Serialize, serde::Deserialize, savechain::Declare)]
//! #[savechain(dropped(name = "mana", at = 2, reason = "magic left the game"))]
//! #[savechain(moved(from = "gold", to = "purse.gold", at = 3))]
//! struct Hero {
//!     #[savechain(renamed(from = "hp", at = 1))]
//!     health: u32,
//!     #[savechain(moved(from = "stats.luck", at = 2), to_double(at = 2))]
//!     luck: f64,
//!     #[savechain(added(at = 3, default = 100.0))]
//!     shield: f64,
//!     #[savechain(each)]
//!     cargo: Vec<Crate>,
//!     purse: Purse,            // struct Purse { gold: u64 }, since version 4
//! }
//! ```
//!
//! Field events: `renamed(from = "old", at = N)` (a member of the same object),
//! `moved(from = "path.relative.to.the.struct", at = N)` (to the field's key),
//! `added(at = N, default = EXPR)` (`EXPR` a Rust expression, converted to the save's
//! value by `savechain::to_value`), `to_double(at = N)`, `wrapped(at = N)` (`v` becomes
//! `[v]`), `unwrapped(at = N)`. Nesting: `nested` on a field whose type derives `Declare`
//! (through an `Option`), `each` on a `Vec<T>` (each element's `T`), `each_value` on a map
//! (each value's type, the map's last type argument). A field's key is its name, or its
//! `#[serde(rename = "...")]`.
//!
//! Struct attributes: `dropped(name = "mana", at = N, reason = "...")` and
//! `moved(from = "gold", to = "purse.gold", at = N)`, paths relative to the struct (`from`
//! where the value is before the step, `to` where it goes, making the objects on the way).
//! A move from a place to itself, or into the value moved, is a compile error, as is a
//! rename to the same name.
//!
//! Clippy's `duplicated_attributes` lint takes two `dropped(.., at = N, ..)` of one
//! struct for a repeated attribute: allow it on that struct.
//!
//! Within one version, the changes are: the fields' renames and moves (field by field),
//! then the struct's moves (in the order written: they see the members under the names
//! the fields' renames give them), then the rest field by field (nested types' changes at
//! the field's place), then the struct's drops. So a member can be moved out of an object
//! that is then dropped, and moved into a nested struct whose own changes of that version
//! then apply to it.

#![deny(missing_docs)]

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as Tokens};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{parse_macro_input, Data, DeriveInput, Error, Expr, Fields, LitInt, LitStr, Type};

/// Derives `savechain::upgrade::Declared` from `#[savechain(...)]` attributes: see the
/// crate's documentation.
#[proc_macro_derive(Declare, attributes(savechain))]
pub fn derive_declare(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match expand(&input) {
        Ok(tokens) => tokens.into(),
        Err(error) => error.to_compile_error().into(),
    }
}

/// What happened to a field at one version.
enum Event {
    Renamed { from: String },
    Moved { from: String },
    Added { default: Box<Expr> },
    ToDouble,
    Wrapped,
    Unwrapped,
}

struct Dated {
    event: Event,
    at: u64,
    span: Span,
}

/// How a field's own type declares its history.
#[derive(Clone, Copy, PartialEq)]
enum Nesting {
    None,
    Nested,
    Each,
    EachValue,
}

struct Field {
    key: String,
    ty: Type,
    events: Vec<Dated>,
    nesting: Nesting,
    nesting_span: Span,
}

struct Dropped {
    name: String,
    at: u64,
    reason: String,
}

/// A struct's `moved(from = "...", to = "...", at = N)`: a value moved between two places
/// of the struct, neither of them a field's own key (into a nested struct, out of a member
/// no field has any more).
struct StructMove {
    from: String,
    to: String,
    at: u64,
}

/// A struct's own attributes: its drops and its moves, in the order written.
struct StructHistory {
    dropped: Vec<Dropped>,
    moves: Vec<StructMove>,
}

fn expand(input: &DeriveInput) -> syn::Result<Tokens> {
    let Data::Struct(data) = &input.data else {
        return Err(Error::new(
            input.ident.span(),
            "Declare is for structs with named fields: an enum's history is declared with a \
             step",
        ));
    };
    let Fields::Named(named) = &data.fields else {
        return Err(Error::new(
            data.fields.span(),
            "Declare is for structs with named fields",
        ));
    };
    let StructHistory { dropped, moves } = struct_attributes(input)?;
    let mut fields = Vec::new();
    for field in &named.named {
        fields.push(field_attributes(field)?);
    }

    let mut versions: Vec<u64> = dropped.iter().map(|d| d.at).collect();
    versions.extend(moves.iter().map(|m| m.at));
    for field in &fields {
        versions.extend(field.events.iter().map(|e| e.at));
    }
    let nested_versions = fields
        .iter()
        .filter(|f| f.nesting != Nesting::None)
        .map(|f| {
            let ty = inner_type(f)?;
            Ok(quote_spanned! {f.nesting_span=>
                versions.extend(<#ty as ::savechain::upgrade::Declared>::versions());
            })
        })
        .collect::<syn::Result<Vec<_>>>()?;

    // The changes of version `from`, in order: the fields' renames and moves, the struct's
    // moves, the rest, drops.
    let mut drops = Vec::new();
    for d in &dropped {
        let (at, path, reason) = (d.at, key_text(&d.name), &d.reason);
        drops.push(quote! {
            if from == #at {
                changes.push(::savechain::upgrade::declared::Change::drop(#path, #reason));
            }
        });
    }
    let struct_moves: Vec<Tokens> = moves
        .iter()
        .map(|m| {
            let (at, from, to) = (m.at, &m.from, &m.to);
            quote! {
                if from == #at {
                    changes.push(::savechain::upgrade::declared::Change::moved(#from, #to));
                }
            }
        })
        .collect();
    let mut renames = Vec::new();
    let mut rest = Vec::new();
    for field in &fields {
        for dated in &field.events {
            let at = dated.at;
            let here = name_after(field, at);
            let change = match &dated.event {
                Event::Renamed { from } => {
                    let to = key_after(field, at);
                    renames.push(quote! {
                        if from == #at {
                            changes.push(::savechain::upgrade::declared::Change::rename(#from, #to));
                        }
                    });
                    continue;
                }
                Event::Moved { from } => {
                    renames.push(quote! {
                        if from == #at {
                            changes.push(::savechain::upgrade::declared::Change::moved(#from, #here));
                        }
                    });
                    continue;
                }
                Event::Added { default } => {
                    let message = format!(
                        "the default of {} (savechain(added(default = ...))) is a value a save \
                         can hold",
                        field.key
                    );
                    quote_spanned! {default.span()=>
                        ::savechain::upgrade::declared::Change::add(
                            #here,
                            ::savechain::to_value(&(#default)).expect(#message),
                        )
                    }
                }
                Event::ToDouble => {
                    quote! { ::savechain::upgrade::declared::Change::to_double(#here) }
                }
                Event::Wrapped => quote! { ::savechain::upgrade::declared::Change::wrap(#here) },
                Event::Unwrapped => {
                    quote! { ::savechain::upgrade::declared::Change::unwrap(#here) }
                }
            };
            rest.push(quote! {
                if from == #at {
                    changes.push(#change);
                }
            });
        }
        if field.nesting != Nesting::None {
            let ty = inner_type(field)?;
            let key = key_text(&field.key);
            let suffix = match field.nesting {
                Nesting::Each => "[]",
                Nesting::EachValue => "[*]",
                _ => "",
            };
            // The field's key as of the step: renamed later, it has its older name.
            let keys = field_names(field);
            rest.push(quote_spanned! {field.nesting_span=>
                {
                    let names: &[(u64, &str)] = &[#(#keys),*];
                    let key: &str = names
                        .iter()
                        .find(|(after, _)| from <= *after)
                        .map_or(#key, |(_, key)| *key);
                    let prefix = ::std::format!("{}{}", key, #suffix);
                    for change in <#ty as ::savechain::upgrade::Declared>::changes(from) {
                        changes.push(change.under(&prefix));
                    }
                }
            });
        }
    }

    let name = &input.ident;
    let (impl_generics, type_generics, where_clause) = input.generics.split_for_impl();
    Ok(quote! {
        impl #impl_generics ::savechain::upgrade::Declared for #name #type_generics #where_clause {
            fn changes(from: u64) -> ::std::vec::Vec<::savechain::upgrade::declared::Change> {
                let mut changes = ::std::vec::Vec::new();
                #(#renames)*
                #(#struct_moves)*
                #(#rest)*
                #(#drops)*
                changes
            }

            fn versions() -> ::std::vec::Vec<u64> {
                let mut versions: ::std::vec::Vec<u64> = ::std::vec![#(#versions),*];
                #(#nested_versions)*
                versions.sort_unstable();
                versions.dedup();
                versions
            }
        }
    })
}

/// A key as a declared path writes it: bare when it is a plain name, quoted otherwise.
fn key_text(key: &str) -> String {
    let mut chars = key.chars();
    let plain = matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        key.to_string()
    } else {
        format!("[{key:?}]")
    }
}

/// The field's key (not a path) once the step from `at` has run: its key, or the name a
/// later rename or move gives it that key from.
fn key_after(field: &Field, at: u64) -> String {
    let later = field
        .events
        .iter()
        .filter(|e| e.at > at)
        .filter_map(|e| match &e.event {
            Event::Renamed { from } | Event::Moved { from } => Some((e.at, from)),
            _ => None,
        })
        .min_by_key(|(at, _)| *at);
    match later {
        None => field.key.clone(),
        Some((_, from)) => from.rsplit('.').next().unwrap_or(from).to_string(),
    }
}

/// The field's path once the step from `at` has run: its key, or, when a later rename or
/// move gave it that key, the name it had before.
fn name_after(field: &Field, at: u64) -> String {
    let mut name = key_text(&field.key);
    let mut later: Vec<&Dated> = field
        .events
        .iter()
        .filter(|e| e.at > at && matches!(e.event, Event::Renamed { .. } | Event::Moved { .. }))
        .collect();
    later.sort_by_key(|e| std::cmp::Reverse(e.at));
    for dated in later {
        match &dated.event {
            Event::Renamed { from } | Event::Moved { from } => name = from.clone(),
            _ => {}
        }
    }
    name
}

/// For a nested field renamed or moved: `(version, name)` pairs, the name the field has
/// after the steps up to `version` ran, for each version with such an event; a step from a
/// later version uses the field's key.
fn field_names(field: &Field) -> Vec<Tokens> {
    let mut ats: Vec<u64> = field
        .events
        .iter()
        .filter(|e| matches!(e.event, Event::Renamed { .. } | Event::Moved { .. }))
        .map(|e| e.at)
        .collect();
    ats.sort_unstable();
    ats.dedup();
    // Before (or at) the first rename's version, the oldest name; and so on.
    ats.iter()
        .map(|&at| {
            let name = name_after(field, at.saturating_sub(1));
            quote! { (#at - 1u64, #name) }
        })
        .collect()
}

/// The type whose history a nested field declares: the field's type (through an
/// `Option`), the element of a `Vec` (`each`), the value of a map (`each_value`).
fn inner_type(field: &Field) -> syn::Result<Type> {
    let ty = generic_args(&field.ty, "Option")
        .and_then(|args| args.into_iter().next())
        .unwrap_or_else(|| field.ty.clone());
    match field.nesting {
        Nesting::Nested | Nesting::None => Ok(ty),
        Nesting::Each => last_arg(&ty).ok_or_else(|| {
            Error::new(
                field.nesting_span,
                "each is for a Vec<T> (or another type with one type argument) whose T derives \
                 Declare",
            )
        }),
        Nesting::EachValue => last_arg(&ty).ok_or_else(|| {
            Error::new(
                field.nesting_span,
                "each_value is for a map (BTreeMap<K, V>, HashMap<K, V>) whose V derives \
                 Declare",
            )
        }),
    }
}

/// The type arguments of `ty` when it is the type `name` (`Option<T>`).
fn generic_args(ty: &Type, name: &str) -> Option<Vec<Type>> {
    let Type::Path(path) = ty else { return None };
    let last = path.path.segments.last()?;
    if last.ident != name {
        return None;
    }
    type_args(&last.arguments)
}

fn type_args(arguments: &syn::PathArguments) -> Option<Vec<Type>> {
    let syn::PathArguments::AngleBracketed(args) = arguments else {
        return None;
    };
    Some(
        args.args
            .iter()
            .filter_map(|a| match a {
                syn::GenericArgument::Type(t) => Some(t.clone()),
                _ => None,
            })
            .collect(),
    )
}

/// The last type argument of `ty` (`Vec<T>`: T; `BTreeMap<K, V>`: V).
fn last_arg(ty: &Type) -> Option<Type> {
    let Type::Path(path) = ty else { return None };
    type_args(&path.path.segments.last()?.arguments)?.pop()
}

fn struct_attributes(input: &DeriveInput) -> syn::Result<StructHistory> {
    let mut history = StructHistory {
        dropped: Vec::new(),
        moves: Vec::new(),
    };
    for attr in &input.attrs {
        if attr.path().is_ident("serde") {
            refuse_rename_all(attr)?;
        }
        if !attr.path().is_ident("savechain") {
            continue;
        }
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("dropped") {
                history.dropped.push(struct_dropped(&meta)?);
            } else if meta.path.is_ident("moved") {
                history.moves.push(struct_moved(&meta)?);
            } else {
                return Err(meta.error(
                    "on a struct, savechain(...) takes dropped(name = \"...\", at = N, reason = \
                     \"...\") and moved(from = \"...\", to = \"...\", at = N); a field's history \
                     goes on the field",
                ));
            }
            Ok(())
        })?;
    }
    Ok(history)
}

/// A struct's `dropped(name = "...", at = N, reason = "...")`.
fn struct_dropped(meta: &syn::meta::ParseNestedMeta) -> syn::Result<Dropped> {
    let span = meta.path.span();
    let (mut name, mut at, mut reason) = (None, None, None);
    meta.parse_nested_meta(|inner| {
        if inner.path.is_ident("name") {
            name = Some(inner.value()?.parse::<LitStr>()?.value());
        } else if inner.path.is_ident("at") {
            at = Some(version(&inner.value()?.parse::<LitInt>()?)?);
        } else if inner.path.is_ident("reason") {
            let text = inner.value()?.parse::<LitStr>()?;
            if text.value().trim().is_empty() {
                return Err(Error::new(
                    text.span(),
                    "a drop says why the data can go: a drop is never silent",
                ));
            }
            reason = Some(text.value());
        } else {
            return Err(inner.error("dropped takes name, at and reason"));
        }
        Ok(())
    })?;
    let missing = |what: &str| {
        Error::new(
            span,
            format!(
                "dropped needs {what}: dropped(name = \"mana\", at = 2, reason = \"magic left \
                 the game\")"
            ),
        )
    };
    Ok(Dropped {
        name: name.ok_or_else(|| missing("name"))?,
        at: at.ok_or_else(|| missing("at"))?,
        reason: reason.ok_or_else(|| missing("a reason"))?,
    })
}

/// A struct's `moved(from = "...", to = "...", at = N)`, both paths relative to the struct.
fn struct_moved(meta: &syn::meta::ParseNestedMeta) -> syn::Result<StructMove> {
    let span = meta.path.span();
    let (mut from, mut to, mut at) = (None, None, None);
    meta.parse_nested_meta(|inner| {
        let place = if inner.path.is_ident("from") {
            &mut from
        } else if inner.path.is_ident("to") {
            &mut to
        } else if inner.path.is_ident("at") {
            at = Some(version(&inner.value()?.parse::<LitInt>()?)?);
            return Ok(());
        } else {
            return Err(inner.error("a struct's moved takes from, to and at"));
        };
        let text = inner.value()?.parse::<LitStr>()?;
        if text.value().is_empty() {
            return Err(Error::new(
                text.span(),
                "a path relative to the struct: \"gold\", \"purse.gold\"",
            ));
        }
        *place = Some(text.value());
        Ok(())
    })?;
    let missing = |what: &str| {
        Error::new(
            span,
            format!(
                "a struct's moved needs {what}: moved(from = \"gold\", to = \"purse.gold\", at \
                 = 3)"
            ),
        )
    };
    let moved = StructMove {
        from: from.ok_or_else(|| missing("from"))?,
        to: to.ok_or_else(|| missing("to"))?,
        at: at.ok_or_else(|| missing("at"))?,
    };
    if let Some(why) = move_mistake(&moved.from, &moved.to) {
        return Err(Error::new(span, why));
    }
    Ok(moved)
}

/// What is wrong with a move from `from` to `to` that the library would refuse only when
/// the chain is made (or a rename onto itself, which would fail every save): the same path,
/// or a destination inside the value moved.
fn move_mistake(from: &str, to: &str) -> Option<String> {
    let (from_parts, to_parts) = match (path_parts(from), path_parts(to)) {
        (Some(f), Some(t)) => (f, t),
        // Malformed paths: the library names what is wrong with them.
        _ => (vec![from.to_string()], vec![to.to_string()]),
    };
    if from_parts == to_parts {
        Some(format!(
            "moved from {from:?} to {to:?}, the same place: nothing would move (from is where \
             the value was before the step)"
        ))
    } else if to_parts.starts_with(&from_parts) {
        Some(format!(
            "moved from {from:?} to {to:?}, a place inside the value moved"
        ))
    } else {
        None
    }
}

/// The parts of a declared path, each as the path writes it once read (`["gold"]` and
/// `gold` the same part), for comparing two paths; `None` for a path the library will
/// refuse anyway.
fn path_parts(path: &str) -> Option<Vec<String>> {
    let mut parts = Vec::new();
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(inside) = rest.strip_prefix('[') {
            let close = if let Some(quoted) = inside.strip_prefix('"') {
                // The closing quote: the first one not escaped.
                let mut escaped = false;
                let end = quoted.find(|c| {
                    let closes = c == '"' && !escaped;
                    escaped = c == '\\' && !escaped;
                    closes
                })? + 1;
                let key = syn::parse_str::<LitStr>(&inside[..=end]).ok()?.value();
                parts.push(format!("key {key}"));
                end + 1
            } else {
                let end = inside.find(']')?;
                parts.push(inside[..end].to_string());
                end
            };
            rest = inside[close..].strip_prefix(']')?;
            continue;
        }
        let bare = match rest.strip_prefix('.') {
            Some(after) if !parts.is_empty() => after,
            _ if parts.is_empty() => rest,
            _ => return None,
        };
        let end = bare.find(['.', '[']).unwrap_or(bare.len());
        if end == 0 {
            return None;
        }
        parts.push(format!("key {}", &bare[..end]));
        rest = &bare[end..];
    }
    Some(parts)
}

/// The key a save uses for a struct's members is the field's name unless serde renames it;
/// `rename_all` would change every key in ways this derive does not follow.
fn refuse_rename_all(attr: &syn::Attribute) -> syn::Result<()> {
    let mut found = None;
    // Other serde options are serde's business: read past them.
    let _ = attr.parse_nested_meta(|meta| {
        if meta.path.is_ident("rename_all") {
            found = Some(meta.path.span());
        }
        if meta.input.peek(syn::Token![=]) {
            let _: Expr = meta.value()?.parse()?;
        } else if meta.input.peek(syn::token::Paren) {
            let _ = meta.parse_nested_meta(|inner| {
                if inner.input.peek(syn::Token![=]) {
                    let _: Expr = inner.value()?.parse()?;
                }
                Ok(())
            });
        }
        Ok(())
    });
    match found {
        Some(span) => Err(Error::new(
            span,
            "Declare does not follow serde's rename_all: rename each field with \
             #[serde(rename = \"...\")] instead",
        )),
        None => Ok(()),
    }
}

/// A field's `#[serde(rename = "...")]`, if it has one.
fn serde_rename(field: &syn::Field) -> syn::Result<Option<String>> {
    let mut renamed = None;
    for attr in &field.attrs {
        if !attr.path().is_ident("serde") {
            continue;
        }
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename") && meta.input.peek(syn::Token![=]) {
                renamed = Some(meta.value()?.parse::<LitStr>()?.value());
            } else if meta.input.peek(syn::Token![=]) {
                let _: Expr = meta.value()?.parse()?;
            } else if meta.input.peek(syn::token::Paren) {
                let _ = meta.parse_nested_meta(|inner| {
                    if inner.input.peek(syn::Token![=]) {
                        let _: Expr = inner.value()?.parse()?;
                    }
                    Ok(())
                });
            }
            Ok(())
        });
    }
    Ok(renamed)
}

fn version(lit: &LitInt) -> syn::Result<u64> {
    let at: u64 = lit.base10_parse()?;
    if at == 0 {
        return Err(Error::new(
            lit.span(),
            "versions start at 1: at = N is the step from version N to N + 1",
        ));
    }
    Ok(at)
}

fn field_attributes(field: &syn::Field) -> syn::Result<Field> {
    let ident = field.ident.as_ref().expect("named fields");
    let key = match serde_rename(field)? {
        Some(key) => key,
        None => ident.to_string().trim_start_matches("r#").to_string(),
    };
    let mut out = Field {
        key,
        ty: field.ty.clone(),
        events: Vec::new(),
        nesting: Nesting::None,
        nesting_span: ident.span(),
    };
    for attr in &field.attrs {
        if !attr.path().is_ident("savechain") {
            continue;
        }
        attr.parse_nested_meta(|meta| {
            let span = meta.path.span();
            let word = meta
                .path
                .get_ident()
                .map(|i| i.to_string())
                .unwrap_or_default();
            let nesting = match word.as_str() {
                "nested" => Some(Nesting::Nested),
                "each" => Some(Nesting::Each),
                "each_value" => Some(Nesting::EachValue),
                _ => None,
            };
            if let Some(nesting) = nesting {
                if out.nesting != Nesting::None {
                    return Err(meta.error("one of nested, each and each_value per field"));
                }
                out.nesting = nesting;
                out.nesting_span = span;
                return Ok(());
            }
            let (mut from, mut at, mut default) = (None, None, None);
            let known = [
                "renamed",
                "moved",
                "added",
                "to_double",
                "wrapped",
                "unwrapped",
            ];
            if !known.contains(&word.as_str()) {
                return Err(meta.error(
                    "a field's savechain(...) takes renamed, moved, added, to_double, wrapped, \
                     unwrapped, nested, each or each_value",
                ));
            }
            meta.parse_nested_meta(|inner| {
                if inner.path.is_ident("at") {
                    at = Some(version(&inner.value()?.parse::<LitInt>()?)?);
                } else if inner.path.is_ident("from")
                    && matches!(word.as_str(), "renamed" | "moved")
                {
                    let text = inner.value()?.parse::<LitStr>()?;
                    if text.value().is_empty() {
                        return Err(Error::new(text.span(), "from is a member's name"));
                    }
                    if word == "renamed" && text.value().contains(['.', '[']) {
                        return Err(Error::new(
                            text.span(),
                            "renamed takes the old name of a member of the same struct; a \
                             path elsewhere is moved(from = \"...\")",
                        ));
                    }
                    from = Some(text.value());
                } else if inner.path.is_ident("default") && word == "added" {
                    default = Some(inner.value()?.parse::<Expr>()?);
                } else {
                    let takes = match word.as_str() {
                        "renamed" | "moved" => "from and at",
                        "added" => "at and default",
                        _ => "at",
                    };
                    return Err(inner.error(format!("{word} takes {takes}")));
                }
                Ok(())
            })?;
            let at = at.ok_or_else(|| {
                Error::new(
                    span,
                    format!("{word} needs at = N, the version whose step makes the change"),
                )
            })?;
            let needs = |what: &str| Error::new(span, format!("{word} needs {what}"));
            let event = match word.as_str() {
                "renamed" => Event::Renamed {
                    from: from.ok_or_else(|| needs("from = \"old name\""))?,
                },
                "moved" => Event::Moved {
                    from: from.ok_or_else(|| needs("from = \"path.relative.to.the.struct\""))?,
                },
                "added" => {
                    Event::Added {
                        default: Box::new(default.ok_or_else(|| {
                            needs("default = EXPR, the value where it is missing")
                        })?),
                    }
                }
                "to_double" => Event::ToDouble,
                "wrapped" => Event::Wrapped,
                _ => Event::Unwrapped,
            };
            out.events.push(Dated { event, at, span });
            Ok(())
        })?;
    }
    // A field added at N has no history before N.
    if let Some(added) = out
        .events
        .iter()
        .find(|e| matches!(e.event, Event::Added { .. }))
    {
        if let Some(earlier) = out.events.iter().find(|e| e.at < added.at) {
            return Err(Error::new(
                earlier.span,
                format!(
                    "the field is added at {}: it has no history before that",
                    added.at
                ),
            ));
        }
    }
    // A field moved or renamed from the name it has after that step: nothing would move.
    for dated in &out.events {
        let mistake = match &dated.event {
            Event::Moved { from } => move_mistake(from, &name_after(&out, dated.at)),
            Event::Renamed { from } if *from == key_after(&out, dated.at) => Some(format!(
                "renamed from {from:?}, the name it has after that step: a rename to itself \
                 changes nothing"
            )),
            _ => None,
        };
        if let Some(why) = mistake {
            return Err(Error::new(dated.span, why));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The error `expand` gives for `source`, and the text its span covers.
    fn error(source: &str) -> (String, String) {
        let input: DeriveInput = syn::parse_str(source).unwrap();
        let Err(error) = expand(&input) else {
            panic!("no error for {source}")
        };
        let covered = error.span().source_text().unwrap_or_default();
        (error.to_string(), covered)
    }

    #[test]
    fn bad_attributes_are_errors_at_the_attribute() {
        let (message, covered) =
            error(r#"struct S { #[savechain(renamed(from = "hp"))] health: u32 }"#);
        assert_eq!(
            message,
            "renamed needs at = N, the version whose step makes the change"
        );
        assert_eq!(covered, "renamed");
        let (message, covered) =
            error(r#"struct S { #[savechain(renamed(form = "hp", at = 1))] h: u32 }"#);
        assert_eq!(message, "renamed takes from and at");
        assert_eq!(covered, "form");
        let (message, _) =
            error(r#"struct S { #[savechain(renamed(from = "a.b", at = 1))] h: u32 }"#);
        assert!(
            message.starts_with("renamed takes the old name"),
            "{message}"
        );
        let (message, _) = error(r#"struct S { #[savechain(added(at = 0, default = 1))] h: u32 }"#);
        assert!(message.starts_with("versions start at 1"), "{message}");
        let (message, _) = error(r#"struct S { #[savechain(rename(from = "x", at = 1))] h: u32 }"#);
        assert!(
            message.starts_with("a field's savechain(...) takes renamed"),
            "{message}"
        );
        let (message, _) =
            error(r#"#[savechain(dropped(name = "mana", at = 2))] struct S { h: u32 }"#);
        assert!(message.starts_with("dropped needs a reason"), "{message}");
        let (message, _) = error(
            r#"#[savechain(dropped(name = "mana", at = 2, reason = " "))] struct S { h: u32 }"#,
        );
        assert!(message.contains("never silent"), "{message}");
        let (message, _) = error(
            r#"struct S { #[savechain(added(at = 3, default = 0), to_double(at = 2))] h: u32 }"#,
        );
        assert_eq!(
            message,
            "the field is added at 3: it has no history before that"
        );
        let (message, _) = error(r#"#[serde(rename_all = "camelCase")] struct S { h: u32 }"#);
        assert!(
            message.starts_with("Declare does not follow serde's rename_all"),
            "{message}"
        );
        let (message, _) = error("struct S(u32);");
        assert_eq!(message, "Declare is for structs with named fields");
        let (message, _) = error(r#"struct S { #[savechain(each)] h: u32 }"#);
        assert!(message.starts_with("each is for a Vec<T>"), "{message}");
    }

    #[test]
    fn a_move_or_rename_to_the_same_place_is_an_error_at_the_attribute() {
        // The struct's moved: the same path, also written another way, or into itself.
        let (message, covered) =
            error(r#"#[savechain(moved(from = "gold", to = "gold", at = 3))] struct S { h: u32 }"#);
        assert_eq!(
            message,
            "moved from \"gold\" to \"gold\", the same place: nothing would move (from is \
             where the value was before the step)"
        );
        assert_eq!(covered, "moved");
        let (message, _) = error(
            r#"#[savechain(moved(from = "purse.gold", to = "[\"purse\"].gold", at = 3))]
               struct S { h: u32 }"#,
        );
        assert!(message.contains("the same place"), "{message}");
        let (message, covered) = error(
            r#"#[savechain(moved(from = "purse", to = "purse.gold", at = 3))] struct S { h: u32 }"#,
        );
        assert_eq!(
            message,
            "moved from \"purse\" to \"purse.gold\", a place inside the value moved"
        );
        assert_eq!(covered, "moved");
        // A field's moved, to its own key; or to the name a later rename takes it from.
        let (message, covered) =
            error(r#"struct S { #[savechain(moved(from = "gold", at = 3))] gold: u32 }"#);
        assert!(
            message.starts_with("moved from \"gold\" to \"gold\", the same place"),
            "{message}"
        );
        assert_eq!(covered, "moved");
        let (message, _) = error(
            r#"struct S {
                #[savechain(moved(from = "coins", at = 2), renamed(from = "coins", at = 3))]
                gold: u32,
            }"#,
        );
        assert!(
            message.starts_with("moved from \"coins\" to \"coins\", the same place"),
            "{message}"
        );
        let (message, covered) =
            error(r#"struct S { #[savechain(renamed(from = "gold", at = 3))] gold: u32 }"#);
        assert!(
            message.starts_with("renamed from \"gold\", the name it has after that step"),
            "{message}"
        );
        assert_eq!(covered, "renamed");
        // A move elsewhere is none of these.
        let input: DeriveInput = syn::parse_str(
            r#"#[savechain(moved(from = "gold", to = "purse.gold", at = 3))]
               struct S { #[savechain(moved(from = "purse.gold", at = 2))] gold: u32 }"#,
        )
        .unwrap();
        assert!(expand(&input).is_ok());
    }

    #[test]
    fn a_structs_moved_needs_from_to_and_at() {
        let (message, covered) =
            error(r#"#[savechain(moved(from = "gold", at = 3))] struct S { h: u32 }"#);
        assert_eq!(
            message,
            "a struct's moved needs to: moved(from = \"gold\", to = \"purse.gold\", at = 3)"
        );
        assert_eq!(covered, "moved");
        let (message, _) =
            error(r#"#[savechain(moved(from = "gold", to = "purse.gold"))] struct S { h: u32 }"#);
        assert!(
            message.starts_with("a struct's moved needs at"),
            "{message}"
        );
        let (message, covered) = error(
            r#"#[savechain(moved(from = "gold", into = "purse.gold", at = 3))] struct S { h: u32 }"#,
        );
        assert_eq!(message, "a struct's moved takes from, to and at");
        assert_eq!(covered, "into");
        let (message, _) =
            error(r#"#[savechain(moved(from = "", to = "a", at = 3))] struct S { h: u32 }"#);
        assert!(
            message.starts_with("a path relative to the struct"),
            "{message}"
        );
        let (message, _) =
            error(r#"#[savechain(renamed(from = "a", at = 3))] struct S { h: u32 }"#);
        assert!(
            message.starts_with("on a struct, savechain(...) takes dropped(")
                && message.contains("moved(from"),
            "{message}"
        );
    }

    #[test]
    fn paths_compared_by_their_parts() {
        let parts = |path: &str| path_parts(path);
        assert_eq!(parts("purse.gold"), parts(r#"["purse"].gold"#));
        assert_eq!(parts("towns[*].pop"), parts(r#"["towns"][*]["pop"]"#));
        assert_ne!(parts("cargo[].qty"), parts("cargo[*].qty"));
        assert_eq!(
            parts(r#"["a \"b\"."].c"#),
            Some(vec!["key a \"b\".".to_string(), "key c".to_string()])
        );
        for malformed in [".a", "a..b", "a.", "a[", r#"["a"#, "a b[0"] {
            assert_eq!(parts(malformed), None, "{malformed}");
        }
    }

    #[test]
    fn keys_in_paths() {
        assert_eq!(key_text("health"), "health");
        assert_eq!(key_text("population count"), "[\"population count\"]");
    }
}
