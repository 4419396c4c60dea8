//! The exact JSON the protocol names: field names, nulls, enum values.

use redline_protocol::*;
use serde_json::{Value, json};

fn change() -> Change {
    Change {
        change_id: "3f2504e0-4f89-11d3-9a0c-0305e82c3301".into(),
        short_id: "7".into(),
        project_id: "p".into(),
        stage_id: "s".into(),
        group_id: None,
        title: "Fix it".into(),
        body: None,
        status: ChangeStatus::NeedsAnswer,
        route: None,
        git_sha: None,
        deployment_id: None,
        locale: None,
        viewport: Some(Viewport { width: 1280.0, height: 720.0 }),
        capture: None,
        screenshot_key: None,
        console_errors: vec![],
        source: Source::Extension,
        filed_by: None,
        branch: None,
        head_commit: None,
        resolved_at: None,
        live: None,
        verified_at: None,
        verified_by: None,
        completed_by: None,
        commit_url: None,
        pull_request_url: None,
        created_at: Timestamp::from_unix_millis(0),
        held: false,
        held_until: None,
        screenshot_url: None,
        element_count: None,
        console_error_count: None,
        message_count: None,
    }
}

#[test]
fn change_uses_camel_case_and_nulls() {
    let v = serde_json::to_value(change()).unwrap();
    let obj = v.as_object().unwrap();
    let mut keys: Vec<_> = obj.keys().map(String::as_str).collect();
    keys.sort_unstable();
    let mut expected = vec![
        "changeId",
        "shortId",
        "projectId",
        "stageId",
        "groupId",
        "title",
        "body",
        "status",
        "route",
        "gitSha",
        "deploymentId",
        "locale",
        "viewport",
        "capture",
        "screenshotKey",
        "consoleErrors",
        "source",
        "filedBy",
        "branch",
        "headCommit",
        "resolvedAt",
        "live",
        "verifiedAt",
        "verifiedBy",
        "completedBy",
        "createdAt",
        "held",
        "heldUntil",
        "screenshotUrl",
    ];
    expected.sort_unstable();
    assert_eq!(keys, expected);
    assert_eq!(v["status"], "needs_answer");
    assert_eq!(v["groupId"], Value::Null);
    assert_eq!(v["createdAt"], "1970-01-01T00:00:00.000Z");
    assert_eq!(v["source"], "extension");
    let back: Change = serde_json::from_value(v).unwrap();
    assert_eq!(back, change());
}

#[test]
fn missing_optional_fields_read_as_none() {
    let v = json!({
        "changeId": "c", "shortId": "1", "projectId": "p", "stageId": "s", "title": "t",
        "status": "open", "source": "cli", "createdAt": "2026-11-29T17:35:27Z", "held": true
    });
    let c: Change = serde_json::from_value(v).unwrap();
    assert_eq!(c.body, None);
    assert!(c.console_errors.is_empty());
    // Fabric's records have no verification: they still read.
    assert_eq!((c.verified_at, c.verified_by, c.completed_by), (None, None, None));
}

#[test]
fn verify_change_names() {
    assert_eq!(VerifyChange::NAME, "verifyChange");
    assert_eq!(VerifyChange::SCOPE, Some(Scope::File));
    let input: VerifyChangeInput = serde_json::from_value(json!({
        "changeId": "#7", "projectId": "p", "verdict": "still_wrong", "body": "Still red",
        "screenshotKey": "k.png"
    }))
    .unwrap();
    assert_eq!(input.verdict, Verdict::StillWrong);
    assert_eq!(input.screenshot_key.as_deref(), Some("k.png"));
    let fixed = VerifyChangeInput {
        change_id: "7".into(),
        project_id: None,
        verdict: Verdict::Fixed,
        body: None,
        screenshot_key: None,
    };
    assert_eq!(serde_json::to_value(&fixed).unwrap(), json!({"changeId": "7", "verdict": "fixed"}));
    assert!(
        serde_json::from_value::<VerifyChangeInput>(json!({"changeId": "7", "verdict": "maybe"})).is_err()
    );
    for v in Verdict::ALL {
        assert_eq!(Verdict::from_wire(v.as_str()), Some(v));
        assert_eq!(serde_json::to_value(v).unwrap(), v.as_str());
    }
    assert_eq!(ChangeEventType::from_wire("verified"), Some(ChangeEventType::Verified));
    assert_eq!(serde_json::to_value(MessageType::Verdict).unwrap(), "verdict");
    let mut c = change();
    c.verified_at = Some(Timestamp::from_unix_millis(1000));
    c.verified_by = Some("Ann".into());
    let v = serde_json::to_value(&c).unwrap();
    assert_eq!(v["verifiedAt"], "1970-01-01T00:00:01.000Z");
    assert_eq!(v["verifiedBy"], "Ann");
}

#[test]
fn capture_and_element_names() {
    let capture = Capture {
        stroke: vec![Point { x: 1.0, y: 2.0 }],
        bounds: Some(Rect { x: 0.0, y: 0.0, width: 10.0, height: 5.0 }),
        elements: vec![Element { test_id: Some("save".into()), tag: "button".into(), ..Default::default() }],
        device_pixel_ratio: Some(2.0),
        scroll: Some(Point { x: 0.0, y: 300.0 }),
        failed_requests: vec![FailedRequest::new("GET", "https://api.example/orders?page=2", 404)],
    };
    let v = serde_json::to_value(&capture).unwrap();
    assert_eq!(v["devicePixelRatio"], 2.0);
    assert_eq!(
        v["failedRequests"],
        serde_json::json!([{"method": "GET", "url": "https://api.example/orders", "status": 404}])
    );
    assert_eq!(v["bounds"]["width"], 10.0);
    let el = &v["elements"][0];
    for key in [
        "testId",
        "sourceAnchor",
        "cssPath",
        "text",
        "rect",
        "componentTestId",
        "role",
        "name",
        "tag",
        "styles",
    ] {
        assert!(el.get(key).is_some(), "{key}");
    }
}

#[test]
fn captures_filed_before_styles_and_failed_requests_still_read() {
    let old = serde_json::json!({"stroke": [], "bounds": null, "elements": [{"tag": "button"}]});
    let capture: Capture = serde_json::from_value(old).unwrap();
    assert_eq!((capture.elements[0].styles.as_ref(), capture.failed_requests.len()), (None, 0));
    let styled = serde_json::json!({"elements": [{"styles": {"changed": {"color": "rgb(255, 0, 0)"}}}]});
    let capture: Capture = serde_json::from_value(styled).unwrap();
    let styles = capture.elements[0].styles.as_ref().unwrap();
    assert_eq!((styles.changed.get("color"), styles.unchanged.len()), (Some("rgb(255, 0, 0)"), 0));
}

#[test]
fn stage_group_message_names() {
    let stage = Stage {
        stage_id: "s".into(),
        project_id: "p".into(),
        branch: "main".into(),
        stage_type: StageType::Production,
        url: None,
        git_sha: None,
        deployment_id: None,
        changes_enabled: true,
        created_at: Timestamp::from_unix_millis(0),
    };
    let v = serde_json::to_value(&stage).unwrap();
    assert_eq!(v["type"], "production");
    assert_eq!(v["changesEnabled"], true);
    let group = Group {
        group_id: "g".into(),
        project_id: "p".into(),
        title: "t".into(),
        claimed_by: Some("a".into()),
        claim_expires_at: None,
        created_at: Timestamp::from_unix_millis(0),
        fence: 3,
    };
    let v = serde_json::to_value(&group).unwrap();
    assert_eq!(v["claimExpiresAt"], Value::Null);
    assert_eq!(v["fence"], 3);
    let message = Message {
        message_id: "m".into(),
        change_id: "c".into(),
        author_kind: AuthorKind::Agent,
        author_name: None,
        body: "Which one?".into(),
        attachments: vec![Attachment {
            key: "1".into(),
            label: "A".into(),
            kind: AttachmentKind::Option,
            url: None,
        }],
        chosen_option: None,
        created_at: Timestamp::from_unix_millis(0),
        message_type: Some(MessageType::Question),
    };
    let v = serde_json::to_value(&message).unwrap();
    assert_eq!(v["type"], "question");
    assert_eq!(v["authorKind"], "agent");
    assert_eq!(v["attachments"][0]["kind"], "option");
    assert_eq!(v["attachments"][0]["url"], Value::Null);
    assert_eq!(v["chosenOption"], Value::Null);
    // A sender that states no type (Fabric) still parses.
    let mut untyped = v.clone();
    untyped.as_object_mut().unwrap().remove("type");
    let back: Message = serde_json::from_value(untyped).unwrap();
    assert_eq!(back.message_type, None);
    assert_eq!(back.role(), MessageType::Question);
}

#[test]
fn envelope_and_rpc_names() {
    let env = Envelope::new::<GetSession>(GetSessionInput {});
    assert_eq!(serde_json::to_value(&env).unwrap(), json!({"rpcName": "getSession", "data": {}}));
    assert_eq!(ClaimChanges::NAME, "claimChanges");
    assert_eq!(ClaimChanges::SCOPE, Some(Scope::Write));
    assert_eq!(RPC_NAMES.len(), 30);
    assert!(RPC_NAMES.contains(&"reportRegression") && RPC_NAMES.contains(&"recordRefind"));
    assert_eq!(ReleaseGroup::SCOPE, Some(Scope::Write), "an agent gives its own group up");
    assert_eq!(CountChanges::SCOPE, Some(Scope::Read));
    assert_eq!(ListWebhooks::SCOPE, Some(Scope::Admin));
    assert_eq!(serde_json::to_value(Scope::Admin).unwrap(), "changes:project:admin");
    let input = ListChangesInput { project_id: "p".into(), ..Default::default() };
    assert_eq!(
        serde_json::to_value(&input).unwrap(),
        json!({"projectId": "p", "pickupOnly": false, "includeDone": false})
    );
    let claim: ClaimChangesInput = serde_json::from_value(
        json!({"projectId": "p", "changeIds": ["#7"], "claimedBy": "a", "leaseMinutes": 5}),
    )
    .unwrap();
    assert_eq!(claim.change_ids.unwrap(), ["#7"]);
}

#[test]
fn errors_events_scopes() {
    let body = ErrorBody {
        message: "nothing to claim".into(),
        code: codes::NOT_CLAIMABLE.into(),
        items: Some(vec![NotClaimableItem {
            change_id: "c".into(),
            short_id: Some("7".into()),
            reason: NotClaimableReason::NotFound,
            claimable_at: None,
            claimed_by: None,
        }]),
    };
    let v = serde_json::to_value(&body).unwrap();
    assert_eq!(v["items"][0]["reason"], "not_found");
    assert_eq!(v["items"][0]["claimableAt"], Value::Null);
    let plain = ErrorBody { message: "m".into(), code: codes::BAD_INPUT.into(), items: None };
    assert_eq!(serde_json::to_value(&plain).unwrap(), json!({"message": "m", "code": "bad_input"}));
    let ev = ChangeEvent {
        event_type: ChangeEventType::Filed,
        change_id: "c".into(),
        short_id: "1".into(),
        seq: 4,
    };
    assert_eq!(
        serde_json::to_value(&ev).unwrap(),
        json!({"type": "filed", "changeId": "c", "shortId": "1", "seq": 4})
    );
    assert_eq!(serde_json::to_value(Scope::File).unwrap(), "changes:project:file");
    assert_eq!(Scope::from_wire("changes:project:read"), Some(Scope::Read));
    assert_eq!(events_path("p1"), "/events/changes:p1");
    let status: CliAuthPoll = serde_json::from_value(json!({"status": "pending"})).unwrap();
    assert_eq!(status.status, CliAuthStatus::Pending);
}

/// A record from another server (Fabric) reads whatever length its element strings
/// have; our server refuses over-long ones when they are filed, after parsing.
#[test]
fn long_element_strings_are_read_and_refused_only_when_filed() {
    let capture: Capture = serde_json::from_value(json!({
        "stroke": [], "bounds": null,
        "elements": [{"text": "x".repeat(600), "tag": "div"}]
    }))
    .unwrap();
    assert_eq!(capture.elements[0].text.as_ref().unwrap().len(), 600);
    let refused = validate_capture(&capture).unwrap_err();
    assert_eq!(refused.field, "capture.elements[0].text");
}
