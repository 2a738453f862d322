-- AlterTable
ALTER TABLE "Operation" ADD COLUMN     "recoveredBy" TEXT;
