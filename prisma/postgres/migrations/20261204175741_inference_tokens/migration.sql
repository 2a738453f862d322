-- CreateTable
CREATE TABLE "InferenceTokens" (
    "clientId" TEXT NOT NULL,
    "day" TEXT NOT NULL,
    "tokens" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "InferenceTokens_pkey" PRIMARY KEY ("clientId","day")
);
