//! `${VAR}` and `${VAR:-default}` references in a remote server's URL and
//! headers, resolved from the stock component's environment.
//!
//! mcpbox's own hosts resolve them outside the guest (`remote.grant`), so secrets
//! never enter the sandbox. A stock runtime has no such hook between the
//! component and the network: the component writes the request itself, so it
//! must hold the value. The platform still owns the secret (it sets the
//! instance's environment from its secret store; nothing is baked into the
//! component), and messages still name the URL as configured. The grammar is the
//! guest's one ([`crate::variables`]); only the lookup and the message for an
//! unset variable (which names the runtime's fix) are the stock component's.

use crate::prelude::*;
use crate::variables::{self, Part};

/// Expands the references in `text`; `field` names it in errors.
pub fn interpolate(
    text: &str,
    field: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    for part in variables::parse(text, field)? {
        match part {
            Part::Literal(text) => out.push_str(&text),
            Part::Variable { name, fallback } => {
                match variables::value_of(lookup(&name), fallback.as_deref()) {
                    Some(value) => out.push_str(&value),
                    None => {
                        return Err(format!(
                            "`{field}` uses ${{{name}}}, which is not set; pass {name} to the \
                             component's environment (wasmtime serve --env {name}) or write \
                             ${{{name}:-default}}"
                        ));
                    }
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/me".into()),
            "API_TOKEN" => Some("secret".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn expands_references_and_defaults() {
        assert_eq!(
            interpolate("Bearer ${API_TOKEN}", "h", &env).unwrap(),
            "Bearer secret"
        );
        assert_eq!(
            interpolate("${MISSING:-dflt}/x", "f", &env).unwrap(),
            "dflt/x"
        );
        assert_eq!(interpolate("${EMPTY:-d}", "f", &env).unwrap(), "d");
        assert_eq!(interpolate("${EMPTY}", "f", &env).unwrap(), "");
        assert_eq!(
            interpolate("$HOME ${HOME}", "f", &env).unwrap(),
            "$HOME /home/me"
        );
    }

    #[test]
    fn an_unset_variable_names_the_field_and_the_fix() {
        let e = interpolate("x${NOPE}", "headers.Authorization", &env).unwrap_err();
        assert!(e.contains("headers.Authorization"), "{e}");
        assert!(e.contains("${NOPE}"), "{e}");
        assert!(e.contains("--env NOPE"), "{e}");
        let e = interpolate("${A", "url", &env).unwrap_err();
        assert!(e.contains("unclosed"), "{e}");
        let e = interpolate("${A-B}", "url", &env).unwrap_err();
        assert!(e.contains("invalid variable reference"), "{e}");
    }
}
