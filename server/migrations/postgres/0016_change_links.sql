-- Where a done item's commit and pull request can be seen (`completeChange`'s
-- `commitUrl` and `pullRequestUrl`, derived by the agent from its remote).
ALTER TABLE changes ADD COLUMN commit_url TEXT;
ALTER TABLE changes ADD COLUMN pull_request_url TEXT;
