-- CreateTable
CREATE TABLE "InferenceTokens" (
    "clientId" TEXT NOT NULL,
    "day" TEXT NOT NULL,
    "tokens" BIGINT NOT NULL DEFAULT 0,

    PRIMARY KEY ("clientId", "day")
);
