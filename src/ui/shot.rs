//! The screenshot as filed: the page's pixels with the lasso drawn on and the boxes the
//! filer hid blacked out, plus a crop around the circle for the composer. Encoded by
//! the browser (`OffscreenCanvas`), so no image codec is compiled into wasm.

use js_sys::{JsString, Promise};
use redline_protocol::after_shot::crop_rect;
use redline_protocol::{Point, Rect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    Blob, FileReader, ImageBitmap, ImageEncodeOptions, OffscreenCanvas, OffscreenCanvasRenderingContext2d,
};

use crate::rules::outbox::Image;
use crate::rules::redact::Redactions;

/// WebP keeps a 1280×720 screenshot around 100 KB where PNG takes 500 KB or more.
const CONTENT_TYPE: &str = "image/webp";
const QUALITY: f64 = 0.9;
const STROKE: &str = "#dc2626";
/// What a hidden area's pixels become: black, as the secret fields the page side masks
/// before the tab is captured (`capture/screenshot.rs`).
const HIDDEN: &str = "#000000";

#[wasm_bindgen]
extern "C" {
    /// The global `fetch`, given a URL as the JS string it arrived as: a screenshot's
    /// `data:` URL runs to megabytes, which web-sys's `&str` would copy through wasm.
    #[wasm_bindgen(js_name = fetch)]
    fn fetch_js_string(url: &JsString) -> Promise;
}

/// A screenshot of the page as the content script posted it, ahead of the stroke
/// (`PageEvent::Screenshot`), decoded as soon as it arrives so that a composer opening on
/// it does not wait.
#[derive(Clone)]
pub struct PageShot {
    id: u32,
    /// The PNG's `data:` URL, kept as the JS string it arrived as.
    image: JsString,
    /// Resolves with the decoded `ImageBitmap`, or with an `Error` (never rejects: no
    /// composer may ever await it).
    bitmap: Promise,
}

impl PageShot {
    /// The screenshot a message from the content script posts, if it is one: read by
    /// hand rather than with serde, so that the image is not copied into wasm.
    pub fn posted(message: &JsValue) -> Option<PageShot> {
        let field = |name: &str| js_sys::Reflect::get(message, &JsValue::from_str(name)).ok();
        if field("type")?.as_string()? != "redline:screenshot" {
            return None;
        }
        let id = field("id")?.as_f64().filter(|id| id.fract() == 0.0 && *id >= 0.0)? as u32;
        let image = field("image")?.dyn_into::<JsString>().ok()?;
        let fetched = fetch_js_string(&image);
        let bitmap = wasm_bindgen_futures::future_to_promise(async move {
            Ok(match bitmap_of_fetched(fetched).await {
                Ok(bitmap) => bitmap.into(),
                Err(error) => {
                    js_sys::Error::new(&format!("the screenshot could not be decoded: {error:?}")).into()
                }
            })
        });
        Some(PageShot { id, image, bitmap })
    }

    /// The PNG's `data:` URL, to show.
    pub fn data_url(&self) -> String {
        self.image.clone().into()
    }

    async fn bitmap(&self) -> Result<ImageBitmap, JsValue> {
        // Not a bitmap: the `Error` saying why.
        JsFuture::from(self.bitmap.clone()).await?.dyn_into()
    }
}

/// The screenshots the content script posted, newest last. A capture names the newest
/// one posted before it; the one before that is kept too, for a capture still under way
/// when a newer shot was taken.
#[derive(Default)]
pub struct PageShots(Vec<PageShot>);

impl PageShots {
    const KEPT: usize = 2;

    pub fn keep(&mut self, shot: PageShot) {
        if self.0.len() == Self::KEPT {
            self.0.remove(0);
        }
        self.0.push(shot);
    }

    /// The screenshot a capture names (`Captured::screenshot`), or why there is none.
    pub fn named(&self, screenshot: &Result<u32, String>) -> Result<PageShot, String> {
        let id = screenshot.as_ref().map_err(Clone::clone)?;
        let found = self.0.iter().find(|shot| shot.id == *id);
        found.cloned().ok_or_else(|| "the screenshot did not reach the overlay".to_owned())
    }
}

/// The annotated screenshot, kept in the overlay until it is filed: only an image with
/// the hidden areas blacked out is encoded, so no other copy leaves the composer.
pub struct Shot {
    /// The page's pixels with the outline drawn on, in device px.
    annotated: ImageBitmap,
    device_pixel_ratio: f64,
    /// The part shown in the composer, around the circle, in device px.
    crop: Rect,
}

/// Draws `outline` (CSS px) on the viewport screenshot `page_shot` (device px, hence
/// `device_pixel_ratio`) and keeps a crop around the outline's `bounds` to show.
pub async fn annotate(
    page_shot: &PageShot,
    outline: &[Point],
    bounds: Rect,
    device_pixel_ratio: f64,
) -> Result<Shot, JsValue> {
    let bitmap = page_shot.bitmap().await?;
    let (width, height) = (bitmap.width() as f64, bitmap.height() as f64);
    let (canvas, context) = canvas_of(&bitmap)?;
    draw_outline(&context, outline, device_pixel_ratio);
    Ok(Shot {
        annotated: canvas.transfer_to_image_bitmap()?,
        device_pixel_ratio,
        crop: crop_rect(bounds, device_pixel_ratio, width, height),
    })
}

impl Shot {
    /// The whole screenshot to file, with the hidden areas blacked out.
    pub async fn redacted(&self, hidden: &Redactions) -> Result<Image, JsValue> {
        image_of(&encode(&self.redacted_canvas(hidden)?).await?).await
    }

    /// The whole screenshot to file with `hidden` blacked out, encoded ahead of filing,
    /// beside the hidden areas it was made with.
    pub async fn encoded(&self, hidden: Redactions) -> (Redactions, Result<Image, String>) {
        let image = self.redacted(&hidden).await.map_err(|e| format!("{e:?}"));
        (hidden, image)
    }

    /// The image to file with `hidden` blacked out: `ready` (from [`Shot::encoded`]) if it
    /// was made with these hidden areas, else encoded now.
    pub async fn to_file(
        &self,
        hidden: &Redactions,
        ready: Option<(Redactions, Result<Image, String>)>,
    ) -> Result<Image, String> {
        match ready.filter(|(with, _)| with == hidden) {
            Some((_, image)) => image,
            None => self.redacted(hidden).await.map_err(|e| format!("{e:?}")),
        }
    }

    /// The crop around the circle as it will be filed (the hidden areas blacked out),
    /// to show in the composer.
    pub async fn preview(&self, hidden: &Redactions) -> Result<ObjectUrl, JsValue> {
        let whole = self.redacted_canvas(hidden)?.transfer_to_image_bitmap()?;
        let blob = encode(&crop_of(&whole, self.crop)?).await?;
        Ok(ObjectUrl(web_sys::Url::create_object_url_with_blob(&blob)?))
    }

    /// The one place a hidden area's pixels are replaced: every image made from this
    /// screenshot, the one filed and the crop shown, is cut from this canvas.
    fn redacted_canvas(&self, hidden: &Redactions) -> Result<OffscreenCanvas, JsValue> {
        let (canvas, context) = canvas_of(&self.annotated)?;
        context.set_fill_style_str(HIDDEN);
        for area in hidden.pixels(self.device_pixel_ratio, canvas.width(), canvas.height()) {
            context.fill_rect(area.x.into(), area.y.into(), area.width.into(), area.height.into());
        }
        Ok(canvas)
    }
}

/// An object URL of an encoded image, revoked once nothing holds it.
pub struct ObjectUrl(String);

impl ObjectUrl {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Drop for ObjectUrl {
    fn drop(&mut self) {
        release(&self.0);
    }
}

/// The after-shot of "Check on stage": the part of the viewport screenshot `data_url`
/// (device px) around `region` (CSS px), encoded to upload, and a URL to show it.
pub async fn crop(data_url: &str, region: Rect, device_pixel_ratio: f64) -> Result<(Image, String), JsValue> {
    let bitmap = bitmap_of(data_url).await?;
    let crop = crop_rect(region, device_pixel_ratio, bitmap.width() as f64, bitmap.height() as f64);
    let blob = encode(&crop_of(&bitmap, crop)?).await?;
    Ok((image_of(&blob).await?, web_sys::Url::create_object_url_with_blob(&blob)?))
}

/// The after-shot at `url` with the person's new circle drawn on: `circle` in fractions
/// of the image's width and height (`verify::fraction_in`).
pub async fn with_circle(url: &str, circle: &[Point]) -> Result<Image, JsValue> {
    let bitmap = bitmap_of(url).await?;
    let (width, height) = (bitmap.width() as f64, bitmap.height() as f64);
    let (canvas, context) = canvas_of(&bitmap)?;
    let outline: Vec<Point> = circle.iter().map(|p| Point { x: p.x * width, y: p.y * height }).collect();
    draw_outline(&context, &outline, 1.0);
    image_of(&encode(&canvas).await?).await
}

/// A canvas the size of `bitmap` with it drawn on, and its 2D context.
fn canvas_of(bitmap: &ImageBitmap) -> Result<(OffscreenCanvas, OffscreenCanvasRenderingContext2d), JsValue> {
    let canvas = OffscreenCanvas::new(bitmap.width(), bitmap.height())?;
    let context = context_2d(&canvas)?;
    context.draw_image_with_image_bitmap(bitmap, 0.0, 0.0)?;
    Ok((canvas, context))
}

/// The part `crop` (device px) of `bitmap`, on a canvas of its own.
fn crop_of(bitmap: &ImageBitmap, crop: Rect) -> Result<OffscreenCanvas, JsValue> {
    let canvas = OffscreenCanvas::new(crop.width as u32, crop.height as u32)?;
    context_2d(&canvas)?.draw_image_with_image_bitmap_and_sw_and_sh_and_dx_and_dy_and_dw_and_dh(
        bitmap,
        crop.x,
        crop.y,
        crop.width,
        crop.height,
        0.0,
        0.0,
        crop.width,
        crop.height,
    )?;
    Ok(canvas)
}

/// The encoded image as filed.
async fn image_of(blob: &Blob) -> Result<Image, JsValue> {
    Ok(Image { content_type: CONTENT_TYPE.to_owned(), base64: base64_of(blob).await? })
}

async fn bitmap_of(url: &str) -> Result<ImageBitmap, JsValue> {
    let window = web_sys::window().ok_or("no window")?;
    bitmap_of_fetched(window.fetch_with_str(url)).await
}

/// The image a `fetch` under way answers with, decoded.
async fn bitmap_of_fetched(fetched: Promise) -> Result<ImageBitmap, JsValue> {
    let window = web_sys::window().ok_or("no window")?;
    let response: web_sys::Response = JsFuture::from(fetched).await?.dyn_into()?;
    let png: Blob = JsFuture::from(response.blob()?).await?.dyn_into()?;
    JsFuture::from(window.create_image_bitmap_with_blob(&png)?).await?.dyn_into()
}

fn context_2d(canvas: &OffscreenCanvas) -> Result<OffscreenCanvasRenderingContext2d, JsValue> {
    Ok(canvas.get_context("2d")?.ok_or("no 2d context")?.dyn_into()?)
}

fn draw_outline(context: &OffscreenCanvasRenderingContext2d, outline: &[Point], scale: f64) {
    let Some(first) = outline.first() else { return };
    context.begin_path();
    context.move_to(first.x * scale, first.y * scale);
    for p in &outline[1..] {
        context.line_to(p.x * scale, p.y * scale);
    }
    context.close_path();
    context.set_line_width(3.0 * scale);
    context.set_line_join("round");
    context.set_stroke_style_str(STROKE);
    context.stroke();
}

async fn encode(canvas: &OffscreenCanvas) -> Result<Blob, JsValue> {
    let options = ImageEncodeOptions::new();
    options.set_type(CONTENT_TYPE);
    options.set_quality(QUALITY);
    JsFuture::from(canvas.convert_to_blob_with_options(&options)?).await?.dyn_into()
}

/// The blob's bytes as base64, read by the browser.
async fn base64_of(blob: &Blob) -> Result<String, JsValue> {
    let reader = FileReader::new()?;
    let done = Promise::new(&mut |resolve, reject| {
        reader.set_onload(Some(&resolve));
        reader.set_onerror(Some(&reject));
    });
    reader.read_as_data_url(blob)?;
    JsFuture::from(done).await?;
    let data_url = reader.result()?.as_string().ok_or("unreadable screenshot")?;
    let (_, base64) = data_url.split_once(',').ok_or("not a data URL")?;
    Ok(base64.to_owned())
}

/// Frees a crop preview once nothing shows it.
pub fn release(crop_url: &str) {
    let _ = web_sys::Url::revoke_object_url(crop_url);
}
