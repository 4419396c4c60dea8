//! Where a commit and its pull request can be seen on the checkout's forge: the web
//! links `done` sends with `completeChange` (`commitUrl`, `pullRequestUrl`, ours), so the
//! person who filed an item can open the fix. Derived from the remote's URL alone, never
//! by asking the forge: GitHub (`github.com`) and GitLab (`gitlab.com`, and self-hosted
//! hosts whose name starts with `gitlab.`); any other host gives no link.

/// A repository on a forge whose web pages we know how to name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Forge {
    kind: Kind,
    /// `https://host/owner/repo`, without a trailing `/`.
    web: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    GitHub,
    GitLab,
}

impl Forge {
    /// The repository a remote URL names, in the forms git takes: `git@host:owner/repo.git`,
    /// `ssh://git@host[:port]/owner/repo.git` and `https://[user@]host[:port]/owner/repo(.git)`.
    /// An ssh port is not the web server's, so it is dropped; an https one is kept.
    pub fn from_remote(url: &str) -> Option<Forge> {
        let url = url.trim();
        let (authority, path, keep_port) = if let Some(rest) = url.strip_prefix("https://") {
            let (authority, path) = rest.split_once('/')?;
            (authority, path, true)
        } else if let Some(rest) = url.strip_prefix("ssh://") {
            let (authority, path) = rest.split_once('/')?;
            (authority, path, false)
        } else if !url.contains("://") {
            // scp-like: `[user@]host:path`; a `/` before the `:` makes it a local path.
            let (authority, path) = url.split_once(':')?;
            if authority.contains('/') {
                return None;
            }
            (authority, path, false)
        } else {
            return None;
        };
        let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let (host, port) = match host_port.split_once(':') {
            Some((host, port)) if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => {
                (host, Some(port))
            }
            Some(_) => return None,
            None => (host_port, None),
        };
        let host = host.to_ascii_lowercase();
        if host.is_empty() || !host.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-') {
            return None;
        }
        let kind = if host == "github.com" {
            Kind::GitHub
        } else if host == "gitlab.com" || host.starts_with("gitlab.") {
            Kind::GitLab
        } else {
            return None;
        };
        let path = path.trim_matches('/');
        let path = path.strip_suffix(".git").unwrap_or(path);
        let segments: Vec<&str> = path.split('/').collect();
        let fits = match kind {
            Kind::GitHub => segments.len() == 2,
            // GitLab nests projects in groups and subgroups.
            Kind::GitLab => segments.len() >= 2,
        };
        let named = |s: &&str| {
            !s.is_empty()
                && !s.starts_with('.')
                && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        };
        if !fits || !segments.iter().all(named) {
            return None;
        }
        let port = port.filter(|_| keep_port).map(|p| format!(":{p}")).unwrap_or_default();
        Some(Forge { kind, web: format!("https://{host}{port}/{}", segments.join("/")) })
    }

    /// The page of commit `sha` (a full or abbreviated hex id; anything else has none).
    pub fn commit_url(&self, sha: &str) -> Option<String> {
        if !(7..=64).contains(&sha.len()) || !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        Some(match self.kind {
            Kind::GitHub => format!("{}/commit/{sha}", self.web),
            Kind::GitLab => format!("{}/-/commit/{sha}", self.web),
        })
    }

    /// The page of pull request (GitLab: merge request) number `n`.
    pub fn pull_request_url(&self, n: u64) -> String {
        match self.kind {
            Kind::GitHub => format!("{}/pull/{n}", self.web),
            Kind::GitLab => format!("{}/-/merge_requests/{n}", self.web),
        }
    }
}

/// The pull request a commit's trailers name: `PR: #N` or `Pull-Request: N` (any case,
/// `#` optional); the last one when several do.
pub fn pull_request_in_trailers(trailers: &str) -> Option<u64> {
    trailers.lines().rev().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        let key = key.trim();
        if !key.eq_ignore_ascii_case("PR") && !key.eq_ignore_ascii_case("Pull-Request") {
            return None;
        }
        let n = value.trim();
        let n = n.strip_prefix('#').unwrap_or(n);
        n.parse::<u64>().ok().filter(|n| *n > 0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

    fn commit(remote: &str) -> Option<String> {
        Forge::from_remote(remote)?.commit_url(SHA)
    }

    #[test]
    fn github_remotes_in_every_form_name_the_same_pages() {
        let page = format!("https://github.com/acme/shop/commit/{SHA}");
        for remote in [
            "git@github.com:acme/shop.git",
            "git@github.com:acme/shop",
            "ssh://git@github.com/acme/shop.git",
            "ssh://git@github.com:22/acme/shop.git",
            "https://github.com/acme/shop.git",
            "https://github.com/acme/shop",
            "https://github.com/acme/shop/",
            "https://user:token@github.com/acme/shop.git",
            "https://GitHub.com/acme/shop.git",
        ] {
            assert_eq!(commit(remote).as_deref(), Some(page.as_str()), "{remote}");
        }
        let forge = Forge::from_remote("git@github.com:acme/shop.git").unwrap();
        assert_eq!(forge.pull_request_url(12), "https://github.com/acme/shop/pull/12");
    }

    #[test]
    fn gitlab_remotes_keep_their_groups_and_self_hosted_hosts() {
        assert_eq!(
            commit("git@gitlab.com:group/sub/project.git").as_deref(),
            Some(format!("https://gitlab.com/group/sub/project/-/commit/{SHA}").as_str())
        );
        let forge = Forge::from_remote("https://gitlab.example.org:8443/team/app.git").unwrap();
        assert_eq!(
            forge.commit_url("abcdef1").unwrap(),
            "https://gitlab.example.org:8443/team/app/-/commit/abcdef1"
        );
        assert_eq!(forge.pull_request_url(7), "https://gitlab.example.org:8443/team/app/-/merge_requests/7");
        // An ssh port is the ssh server's, not the web server's.
        assert_eq!(
            commit("ssh://git@gitlab.example.org:2222/team/app.git").as_deref(),
            Some(format!("https://gitlab.example.org/team/app/-/commit/{SHA}").as_str())
        );
    }

    #[test]
    fn other_hosts_and_odd_remotes_give_no_link() {
        for remote in [
            "git@bitbucket.org:acme/shop.git",
            "https://example.com/acme/shop.git",
            "https://mygitlab.com/acme/shop.git",
            "https://github.com.evil.example/acme/shop.git",
            "http://github.com/acme/shop.git",
            "git://github.com/acme/shop.git",
            "/srv/git/shop.git",
            "../shop.git",
            "./a:b",
            "https://github.com/acme",
            "https://github.com/acme/shop/tree/main",
            "https://github.com/acme/sh op.git",
            "https://github.com/acme/../shop",
            "git@github.com:acme/shop?x=1",
            "https://github.com:https/acme/shop",
            "",
        ] {
            assert_eq!(commit(remote), None, "{remote}");
        }
        let forge = Forge::from_remote("git@github.com:acme/shop.git").unwrap();
        assert_eq!(forge.commit_url("HEAD"), None);
        assert_eq!(forge.commit_url("abc"), None);
    }

    #[test]
    fn pull_requests_are_read_from_trailers() {
        assert_eq!(pull_request_in_trailers("Change: #3\nPR: #12"), Some(12));
        assert_eq!(pull_request_in_trailers("Pull-Request: 40"), Some(40));
        assert_eq!(pull_request_in_trailers("pull-request: #41\npr: 42"), Some(42));
        assert_eq!(pull_request_in_trailers("PR: soon\nChange-Id: x"), None);
        assert_eq!(pull_request_in_trailers("PR: #0"), None);
        assert_eq!(pull_request_in_trailers(""), None);
    }
}
