export const metadata = { title: "Anchors test app (Next.js)" };

export default function RootLayout({ children }) {
  return (
    <html lang="en">
      <head />
      <body>{children}</body>
    </html>
  );
}
